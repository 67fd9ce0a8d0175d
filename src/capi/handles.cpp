#include "handles.h"

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

// A handle's value: a tag in the top nine bits, the slot's generation in the
// next 33 and the slot index in the low 22. With bits 55 to 63 set it is a
// kernel address on x86-64 (or not canonical) and on AArch64 (bit 55 selects
// the kernel's translation table, whatever the top byte says): it never
// names user memory, so it is never dereferenced by mistake and never taken
// for a pointer into a garbage-collected heap.
constexpr int kIndexBits = 22;  // up to 4M live handles
constexpr int kGenBits = 33;
constexpr uint64_t kGenMax = (uint64_t{1} << kGenBits) - 1;  // generations 1 .. kGenMax
constexpr uint64_t kTag = ~uint64_t{0} << (kIndexBits + kGenBits);
constexpr uint64_t kIndexMask = (uint64_t{1} << kIndexBits) - 1;
static_assert(kIndexBits + kGenBits == 55, "the tag must cover bits 55 to 63");
constexpr uint32_t kChunkBits = 10;  // 1,024 slots (32 KiB) a chunk: a process that only ever has
                                     // a few thousand handles holds a few chunks, not 128 MiB
constexpr uint32_t kChunkSize = 1u << kChunkBits;
constexpr uint32_t kMaxChunks = (1u << kIndexBits) / kChunkSize;
// The guarantee: a handle value is issued at most once in a process. A slot
// takes generations 1 .. kGenMax, one per handle it holds, and a slot whose
// generations are spent is retired: never reused. A released handle so stays
// released (CH_ERR_RELEASED_HANDLE) for the life of the process, however
// many handles come after it. Reaching the end takes kGenMax (8.6e9) reuses
// of each of the 4M slots, 3.6e16 handles; then handle_new fails with
// CH_ERR_OUT_OF_MEMORY rather than issue a value twice.
// A freed slot waits until this many others are waiting before it is
// reused (first in, first out): a stale handle then points at a slot that
// is usually empty, and a slot's generations last longer. Each waiting slot
// keeps the table larger (4,096 kept 160 KiB of chunks and the queue in a
// training loop that holds a dozen handles).
constexpr size_t kReuseDelay = 1024;

struct Slot {
  // The generation of the handle the slot holds or last held: 0 = never
  // used; a live handle's gen has kLive set (a released one's does not).
  std::atomic<uint64_t> gen{0};
  std::atomic<uint32_t> refs{0};
  HandleKind kind{};
  std::shared_ptr<void> object;
};

constexpr uint64_t kLive = uint64_t{1} << 63;

struct Table {
  std::atomic<Slot*> chunks[kMaxChunks] = {};
  std::mutex mutex;  // guards allocation, the free list and chunk creation
  std::deque<uint32_t> free_slots;
  uint32_t next_fresh = 0;
  std::atomic<int64_t> live[kHandleKindCount] = {};

  Table() {
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

// Decode a handle into its slot if it is live with that generation (any kind).
Slot* decode(const void* handle, uint64_t* gen_out) noexcept {
  Table& t = table();
  const uint64_t h = reinterpret_cast<uintptr_t>(handle);
  if ((h & kTag) != kTag) return nullptr;
  const uint64_t gen = (h & ~kTag) >> kIndexBits;
  const uint32_t index = static_cast<uint32_t>(h & kIndexMask);
  Slot* s = slot_at(t, index);
  if (!s || gen == 0 || s->gen.load(std::memory_order_acquire) != (gen | kLive)) return nullptr;
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
    case HandleKind::CudaGraph:
      return "CUDA graph";
  }
  return "";
}

void* encode(uint32_t index, uint64_t gen) {
  return reinterpret_cast<void*>(static_cast<uintptr_t>(kTag | (gen << kIndexBits) | index));
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
    case HandleKind::CudaGraph:
      return "ch_cuda_graph";
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
        fail(CH_ERR_OUT_OF_MEMORY, "no handle left: ", kMaxChunks * kChunkSize,
             " slots are live or retired (each slot's handle values are used once only)");
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
    // Free slots have generations left (spent ones are retired on release).
    const uint64_t gen = (s->gen.load(std::memory_order_relaxed) & ~kLive) + 1;
    s->gen.store(gen | kLive, std::memory_order_release);
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
  uint64_t gen = 0;
  Slot* s = decode(handle, &gen);
  if (!s || s->kind != kind)
    fail(CH_ERR_RELEASED_HANDLE, who, ": ", handle, " is not a live ", handle_kind_name(kind),
         " (released twice?)");
  if (s->refs.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
  std::shared_ptr<void> doomed;
  {
    std::lock_guard<std::mutex> lock(t.mutex);
    // Dead before the object goes: the generation stays, without kLive.
    s->gen.store(gen, std::memory_order_release);
    doomed = std::move(s->object);
    if (gen < kGenMax) {  // a slot whose generations are spent is retired
      try {
        t.free_slots.push_back(
            static_cast<uint32_t>(reinterpret_cast<uintptr_t>(handle) & kIndexMask));
      } catch (...) {
        // the slot is lost for reuse; it stays dead
      }
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
                 encode(i, s->gen.load() & ~kLive), s->refs.load(), what.c_str());
  }
  std::fprintf(stderr, "chainerc: %lld live handle(s)\n", static_cast<long long>(n));
}

}  // namespace chainerc
