#include "handles.h"

#include <sys/mman.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <mutex>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/variable.h"

namespace chainerc {
namespace {

constexpr int kGenBits = 14;  // generations before a slot's handles repeat
constexpr uint64_t kGenMask = (uint64_t{1} << kGenBits) - 1;
constexpr int kIndexBits = 22;  // up to 4M live handles
constexpr uint64_t kRange = uint64_t{1} << (kGenBits + kIndexBits);
constexpr uint32_t kChunkBits = 10;  // 1,024 slots (32 KiB) a chunk: a process that only ever has
                                     // a few thousand handles holds a few chunks, not 512 KiB
constexpr uint32_t kChunkSize = 1u << kChunkBits;
constexpr uint32_t kMaxChunks = (1u << kIndexBits) / kChunkSize;
// A freed slot is reused only once this many others are waiting, so a stale
// handle is caught for a long time before its slot's generation wraps: for at
// least kReuseDelay << kGenBits (16.7M) releases. Each waiting slot keeps the
// table larger (4,096 kept 160 KiB of chunks and the queue in a training loop
// that holds a dozen handles, 0.15 MiB of the small MLP's 1.2 MiB heap).
constexpr size_t kReuseDelay = 1024;

struct Slot {
  std::atomic<uint32_t> gen{0};  // 0 = never used; live handles have gen >= 1
  std::atomic<uint32_t> refs{0};
  HandleKind kind{};
  std::shared_ptr<void> object;
};

struct Table {
  uintptr_t base = 0;
  std::atomic<Slot*> chunks[kMaxChunks] = {};
  std::mutex mutex;  // guards allocation, the free list and chunk creation
  std::deque<uint32_t> free_slots;
  uint32_t next_fresh = 0;
  std::atomic<int64_t> live[kHandleKindCount] = {};

  Table() {
    void* p = mmap(nullptr, kRange, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) {
      std::fprintf(stderr, "chainerc: cannot reserve the handle address range\n");
      std::abort();
    }
    base = reinterpret_cast<uintptr_t>(p);
    if (const char* env = std::getenv("CH_LEAK_REPORT"); env && env[0] == '1')
      std::atexit([] { handle_report_live(); });
  }
};

Table& table() {
  static Table* t = new Table();  // never destroyed: handles may be released during exit
  return *t;
}

Slot* slot_at(Table& t, uint32_t index) {
  Slot* chunk = t.chunks[index >> kChunkBits].load(std::memory_order_acquire);
  return chunk ? &chunk[index & (kChunkSize - 1)] : nullptr;
}

// Decode a handle into its slot if the generation matches (any kind).
Slot* decode(const void* handle, uint32_t* gen_out) noexcept {
  Table& t = table();
  uintptr_t h = reinterpret_cast<uintptr_t>(handle);
  if (h < t.base || h >= t.base + kRange) return nullptr;
  uint64_t off = h - t.base;
  uint32_t gen = static_cast<uint32_t>(off & kGenMask);
  uint32_t index = static_cast<uint32_t>(off >> kGenBits);
  Slot* s = slot_at(t, index);
  if (!s || gen == 0 || s->gen.load(std::memory_order_acquire) != gen) return nullptr;
  if (gen_out) *gen_out = gen;
  return s;
}

std::string describe(HandleKind kind, const void* object) {
  switch (kind) {
    case HandleKind::Array:
      return static_cast<const Array*>(object)->describe();
    case HandleKind::Variable: {
      auto* v = static_cast<const VariableImpl*>(object);
      return std::string(v->creator ? "output of " : "root ") +
             (v->creator ? std::string(v->creator->name()) + ", " : std::string()) +
             v->data.describe();
    }
    case HandleKind::Function:
      return std::string("function '") + static_cast<const Function*>(object)->name() + "'";
    case HandleKind::Context:
      return "callback context";
    case HandleKind::FunctionSet:
      return "function set";
    case HandleKind::Optimizer:
      return "optimizer";
    case HandleKind::Stream:
      return "stream";
    case HandleKind::ElementwiseKernel:
      return "elementwise kernel";
    case HandleKind::ReductionKernel:
      return "reduction kernel";
  }
  return "";
}

void* encode(uint32_t index, uint32_t gen) {
  return reinterpret_cast<void*>(table().base + ((uint64_t{index} << kGenBits) | gen));
}

}  // namespace

const char* handle_kind_name(HandleKind kind) {
  switch (kind) {
    case HandleKind::Array:
      return "ch_array";
    case HandleKind::Variable:
      return "ch_variable";
    case HandleKind::Function:
      return "ch_function";
    case HandleKind::Context:
      return "ch_context";
    case HandleKind::FunctionSet:
      return "ch_function_set";
    case HandleKind::Optimizer:
      return "ch_optimizer";
    case HandleKind::Stream:
      return "ch_stream";
    case HandleKind::ElementwiseKernel:
      return "ch_elementwise_kernel";
    case HandleKind::ReductionKernel:
      return "ch_reduction_kernel";
  }
  return "handle";
}

void* handle_new(HandleKind kind, std::shared_ptr<void> object) {
  Table& t = table();
  uint32_t index;
  Slot* s;
  {
    std::lock_guard<std::mutex> lock(t.mutex);
    if (t.free_slots.size() > kReuseDelay || t.next_fresh >= kMaxChunks * kChunkSize) {
      if (t.free_slots.empty())
        fail(CH_ERR_OUT_OF_MEMORY, "too many live handles (", kMaxChunks * kChunkSize, ")");
      index = t.free_slots.front();
      t.free_slots.pop_front();
    } else {
      index = t.next_fresh++;
      uint32_t c = index >> kChunkBits;
      if (!t.chunks[c].load(std::memory_order_relaxed))
        t.chunks[c].store(new Slot[kChunkSize], std::memory_order_release);
    }
    s = slot_at(t, index);
    s->kind = kind;
    s->object = std::move(object);
    s->refs.store(1, std::memory_order_relaxed);
    uint32_t gen = (s->gen.load(std::memory_order_relaxed) & kGenMask) + 1;
    if (gen > kGenMask) gen = 1;
    s->gen.store(gen, std::memory_order_release);
    t.live[static_cast<int>(kind)].fetch_add(1, std::memory_order_relaxed);
    return encode(index, gen);
  }
}

const std::shared_ptr<void>* handle_find(const void* handle, HandleKind kind) noexcept {
  Slot* s = decode(handle, nullptr);
  if (!s || s->kind != kind) return nullptr;
  return &s->object;
}

const std::shared_ptr<void>& handle_get(const void* handle, HandleKind kind, const char* who,
                                        const char* arg) {
  if (!handle)
    fail(CH_ERR_NULL_HANDLE, who, ": argument '", arg, "' is a NULL ", handle_kind_name(kind));
  Slot* s = decode(handle, nullptr);
  if (!s)
    fail(CH_ERR_RELEASED_HANDLE, who, ": argument '", arg, "' (", handle,
         ") is not a live handle: it was released, or never was a ", handle_kind_name(kind));
  if (s->kind != kind)
    fail(CH_ERR_RELEASED_HANDLE, who, ": argument '", arg, "' is a ", handle_kind_name(s->kind),
         ", not a ", handle_kind_name(kind));
  return s->object;
}

bool handle_retain(const void* handle, HandleKind kind) noexcept {
  Slot* s = decode(handle, nullptr);
  if (!s || s->kind != kind) return false;
  s->refs.fetch_add(1, std::memory_order_relaxed);
  return true;
}

void handle_release(const void* handle, HandleKind kind, const char* who) {
  if (!handle) return;
  Table& t = table();
  uint32_t gen = 0;
  Slot* s = decode(handle, &gen);
  if (!s || s->kind != kind)
    fail(CH_ERR_RELEASED_HANDLE, who, ": ", handle, " is not a live ", handle_kind_name(kind),
         " (released twice?)");
  if (s->refs.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
  std::shared_ptr<void> doomed;
  {
    std::lock_guard<std::mutex> lock(t.mutex);
    // Bump the generation first so the handle is dead before the object goes.
    s->gen.store(gen == kGenMask ? kGenMask + 1 : gen + 1, std::memory_order_release);
    doomed = std::move(s->object);
    uintptr_t off = reinterpret_cast<uintptr_t>(handle) - t.base;
    try {
      t.free_slots.push_back(static_cast<uint32_t>(off >> kGenBits));
    } catch (...) {
      // the slot is lost for reuse; it stays dead
    }
    t.live[static_cast<int>(kind)].fetch_sub(1, std::memory_order_relaxed);
  }
  // Outside the lock: may release the variable's data, free a whole graph,
  // and run callbacks' destructors.
  if (kind == HandleKind::Variable) variable_handle_destroyed(doomed);
  doomed.reset();
}

int64_t handle_live_count(int kind) noexcept {
  Table& t = table();
  if (kind > 0 && kind < kHandleKindCount) return t.live[kind].load();
  int64_t n = 0;
  for (int k = 1; k < kHandleKindCount; ++k) n += t.live[k].load();
  return n;
}

void handle_report_live() noexcept {
  Table& t = table();
  std::lock_guard<std::mutex> lock(t.mutex);
  int64_t n = 0;
  for (uint32_t i = 0; i < t.next_fresh; ++i) {
    Slot* s = slot_at(t, i);
    if (!s || !s->object) continue;
    ++n;
    std::string what;
    try {
      what = describe(s->kind, s->object.get());
    } catch (...) {
    }
    std::fprintf(stderr, "chainerc: live %s %p (%u references): %s\n", handle_kind_name(s->kind),
                 encode(i, s->gen.load() & kGenMask), s->refs.load(), what.c_str());
  }
  std::fprintf(stderr, "chainerc: %lld live handle(s)\n", static_cast<long long>(n));
}

}  // namespace chainerc
