// The kernel side of the CUDA emulator: runs a launch's threads as fibers
// (ucontext), block after block on the launching thread. See cuda_emulation.h.
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "cuda_emulation.h"

namespace chainerc::cuda::emu {

thread_local FiberState* t_fiber = nullptr;
[[noreturn]] void trap(const std::string& why);
thread_local BlockState t_block;

namespace {

// An H100's limits (compute capability 9.0).
constexpr unsigned kMaxThreadsPerBlock = 1024;
constexpr unsigned kMaxBlockDim[3] = {1024, 1024, 64};
constexpr unsigned long long kMaxGridDim[3] = {2147483647ull, 65535, 65535};
constexpr size_t kMaxDynamicShared = 227 * 1024;     // with the opt-in attribute
constexpr size_t kDefaultDynamicShared = 48 * 1024;  // without it
constexpr size_t kStackBytes = 128 * 1024;

enum class State { Ready, AtBarrier, AtWarp, Done };

struct Fiber : FiberState {
  ucontext_t context;
  State state = State::Ready;
  unsigned linear = 0;  // thread index in the block
  const char* barrier_file = nullptr;
  int barrier_line = 0;
  // The warp collective this fiber waits in, and its result.
  WarpOp op = kShfl;
  unsigned mask = 0;
  uint64_t value = 0;
  int arg = 0;
  int width = 32;
  uint64_t result = 0;
};

struct Scheduler {
  ucontext_t main;
  std::vector<Fiber> fibers;
  unsigned count = 0;
  char* stacks = nullptr;  // kMaxThreadsPerBlock stacks, each after a guard page
  size_t stack_stride = 0;
  void (*body)(void*) = nullptr;
  void* ctx = nullptr;
  std::vector<unsigned char> dynamic;
  std::string error;  // first error of the running launch
  std::mt19937 rng{12345};
};

thread_local Scheduler* t_sched = nullptr;
thread_local std::string t_last_message;

Scheduler* scheduler() {
  if (!t_sched) {
    auto* s = new Scheduler;  // one per thread that launches; kept for reuse
    size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    s->stack_stride = kStackBytes + page;
    void* m = mmap(nullptr, s->stack_stride * kMaxThreadsPerBlock, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED) {
      delete s;
      return nullptr;
    }
    s->stacks = static_cast<char*>(m);
    for (unsigned i = 0; i < kMaxThreadsPerBlock; ++i)
      mprotect(s->stacks + i * s->stack_stride, page, PROT_NONE);  // overflow faults
    s->fibers.resize(kMaxThreadsPerBlock);
    t_sched = s;
  }
  return t_sched;
}

Fiber& current() { return *static_cast<Fiber*>(t_fiber); }

void fail_launch(const std::string& why) {
  Scheduler& s = *t_sched;
  if (s.error.empty()) s.error = why;
}

std::string where() {
  const uint3 b = t_block.block_idx;
  const uint3 t = t_fiber->thread_idx;
  return "block (" + std::to_string(b.x) + "," + std::to_string(b.y) + "," + std::to_string(b.z) +
         ") thread (" + std::to_string(t.x) + "," + std::to_string(t.y) + "," +
         std::to_string(t.z) + ")";
}

void yield_to_scheduler() {
  Fiber& f = current();
  swapcontext(&f.context, &t_sched->main);
}

void fiber_entry() {
  Scheduler& s = *t_sched;
  try {
    s.body(s.ctx);
  } catch (const std::exception& e) {
    fail_launch(where() + ": " + e.what());
  }
  current().state = State::Done;
  swapcontext(&current().context, &s.main);  // never resumed
}

// Lanes of warp `w` that exist in the block.
unsigned lanes_present(const Scheduler& s, unsigned w) {
  unsigned first = w * 32;
  unsigned n = s.count - first < 32 ? s.count - first : 32;
  return n == 32 ? 0xffffffffu : ((1u << n) - 1u);
}

// All lanes of the warp named in the mask have arrived: compute each one's
// result and let them go on.
void complete_warp(Scheduler& s, unsigned w, unsigned mask) {
  Fiber* lanes = &s.fibers[w * 32];
  uint64_t ballot = 0;
  bool all = true, any = false;
  for (unsigned l = 0; l < 32; ++l) {
    if (!(mask & (1u << l))) continue;
    bool p = lanes[l].value != 0;
    all = all && p;
    any = any || p;
    if (p) ballot |= 1u << l;
  }
  for (unsigned l = 0; l < 32; ++l) {
    if (!(mask & (1u << l))) continue;
    Fiber& f = lanes[l];
    int width = f.width;
    int lane = static_cast<int>(l);
    int base = lane / width * width;
    int src = lane;
    switch (f.op) {
      case kShfl:
        src = base + ((f.arg % width) + width) % width;
        break;
      case kShflUp:
        src = lane - f.arg >= base ? lane - f.arg : lane;
        break;
      case kShflDown:
        src = lane + f.arg < base + width ? lane + f.arg : lane;
        break;
      case kShflXor:
        src = lane ^ f.arg;
        if (src / width != lane / width || src >= 32) src = lane;
        break;
      default:
        break;
    }
    switch (f.op) {
      case kAll:
        f.result = all;
        break;
      case kAny:
        f.result = any;
        break;
      case kBallot:
        f.result = ballot;
        break;
      case kSyncWarp:
        f.result = 0;
        break;
      default:
        if (!(mask & (1u << src))) {
          fail_launch("warp shuffle: lane " + std::to_string(l) + " of warp " + std::to_string(w) +
                      " reads lane " + std::to_string(src) + ", which is not in the mask");
          f.result = f.value;
        } else {
          f.result = lanes[src].value;
        }
    }
    f.state = State::Ready;
  }
}

}  // namespace

void syncthreads(const char* file, int line) {
  Fiber& f = current();
  f.state = State::AtBarrier;
  f.barrier_file = file;
  f.barrier_line = line;
  yield_to_scheduler();
}

uint64_t warp_collective(WarpOp op, unsigned mask, uint64_t value, int arg, int width) {
  Scheduler& s = *t_sched;
  Fiber& f = current();
  const unsigned w = f.linear / 32, lane = f.linear % 32;
  if (width <= 0 || width > 32 || (width & (width - 1)))
    trap("warp operation: width " + std::to_string(width) + " is not a power of 2 up to 32");
  if (!(mask & (1u << lane)))
    trap(where() + ": warp operation with a mask (0x" + std::to_string(mask) +
         ") that does not name the calling lane " + std::to_string(lane));
  const unsigned present = lanes_present(s, w);
  if (mask & ~present)
    trap(where() + ": warp operation's mask names lanes that do not exist in this block");
  f.op = op;
  f.mask = mask;
  f.value = value;
  f.arg = arg;
  f.width = width;
  f.state = State::AtWarp;
  bool complete = true;
  for (unsigned l = 0; l < 32 && complete; ++l) {
    if (!(mask & (1u << l))) continue;
    const Fiber& o = s.fibers[w * 32 + l];
    if (o.state == State::Done)
      trap(where() + ": warp operation waits for lane " + std::to_string(l) + ", which has exited");
    if (o.state != State::AtWarp)
      complete = false;
    else if (o.op != op || o.mask != mask)
      trap(where() + ": lanes of one warp are in different warp operations");
  }
  if (complete)
    complete_warp(s, w, mask);
  else
    yield_to_scheduler();
  return f.result;
}

unsigned active_mask() {
  Scheduler& s = *t_sched;
  const unsigned w = current().linear / 32;
  unsigned m = 0;
  for (unsigned l = 0; l < 32; ++l)
    if ((lanes_present(s, w) & (1u << l)) && s.fibers[w * 32 + l].state != State::Done)
      m |= 1u << l;
  return m;
}

void trap(const char* why) { trap(std::string(why)); }

unsigned char* dynamic_shared() { return t_sched->dynamic.data(); }

namespace {

// Runs the fibers of the current block to completion; false on an error.
bool run_block(Scheduler& s) {
  const dim3 bd = t_block.block_dim;
  for (unsigned i = 0; i < s.count; ++i) {
    Fiber& f = s.fibers[i];
    f.linear = i;
    f.thread_idx = uint3{i % bd.x, i / bd.x % bd.y, i / (bd.x * bd.y)};
    f.state = State::Ready;
    getcontext(&f.context);
    f.context.uc_stack.ss_sp = s.stacks + i * s.stack_stride + (s.stack_stride - kStackBytes);
    f.context.uc_stack.ss_size = kStackBytes;
    f.context.uc_link = nullptr;
    makecontext(&f.context, fiber_entry, 0);
  }
  std::fill(s.dynamic.begin(), s.dynamic.end(), 0xff);
  std::vector<unsigned> order(s.count);
  for (;;) {
    order.clear();
    for (unsigned i = 0; i < s.count; ++i)
      if (s.fibers[i].state == State::Ready) order.push_back(i);
    if (order.empty()) {
      unsigned done = 0, at_barrier = 0, at_warp = 0;
      const Fiber* first = nullptr;
      const Fiber* other = nullptr;
      for (unsigned i = 0; i < s.count; ++i) {
        const Fiber& f = s.fibers[i];
        if (f.state == State::Done) ++done;
        if (f.state == State::AtWarp) ++at_warp;
        if (f.state == State::AtBarrier) {
          ++at_barrier;
          if (!first)
            first = &f;
          else if (!other && (f.barrier_line != first->barrier_line ||
                              std::strcmp(f.barrier_file, first->barrier_file) != 0))
            other = &f;
        }
      }
      if (done == s.count) return s.error.empty();
      const uint3 b = t_block.block_idx;
      std::string blk = "block (" + std::to_string(b.x) + "," + std::to_string(b.y) + "," +
                        std::to_string(b.z) + ")";
      if (at_barrier != s.count || other) {
        std::string why = "divergent __syncthreads in " + blk + ": " + std::to_string(at_barrier) +
                          " of " + std::to_string(s.count) + " threads wait at a barrier";
        if (first)
          why += std::string(" (") + first->barrier_file + ":" +
                 std::to_string(first->barrier_line) + ")";
        if (other)
          why += std::string(" and others at ") + other->barrier_file + ":" +
                 std::to_string(other->barrier_line);
        if (done) why += ", " + std::to_string(done) + " have exited";
        if (at_warp) why += ", " + std::to_string(at_warp) + " wait in a warp operation";
        fail_launch(why);
        return false;
      }
      for (unsigned i = 0; i < s.count; ++i) s.fibers[i].state = State::Ready;
      continue;
    }
    std::shuffle(order.begin(), order.end(), s.rng);
    for (unsigned i : order) {
      Fiber& f = s.fibers[i];
      if (f.state != State::Ready) continue;  // a warp operation may have changed it
      t_fiber = &f;
      swapcontext(&s.main, &f.context);
      t_fiber = nullptr;
      if (!s.error.empty()) return false;
    }
  }
}

std::string dims(dim3 d) {
  return "(" + std::to_string(d.x) + "," + std::to_string(d.y) + "," + std::to_string(d.z) + ")";
}

}  // namespace

void trap(const std::string& why) {
  fail_launch(why);
  // Abandon this fiber: its stack is reused by the next launch.
  current().state = State::Done;
  setcontext(&t_sched->main);
  std::abort();
}

namespace {
std::mutex g_attr_mutex;
std::map<const void*, size_t>& max_shared_attr() {
  static auto* m = new std::map<const void*, size_t>;  // never destroyed
  return *m;
}
// cudaFuncAttributeMaxDynamicSharedMemorySize as set for `kernel` (48 KiB unset).
size_t max_dynamic_shared(const void* kernel) {
  std::lock_guard<std::mutex> l(g_attr_mutex);
  auto it = max_shared_attr().find(kernel);
  return it == max_shared_attr().end() ? kDefaultDynamicShared : it->second;
}
}  // namespace

void set_max_dynamic_shared(const void* kernel, size_t bytes) {
  std::lock_guard<std::mutex> l(g_attr_mutex);
  max_shared_attr()[kernel] = bytes;
}

namespace {

// The launch limits, checked when the launch is queued (as on a GPU, where a
// bad configuration fails the launch call itself).
cudaError_t validate(dim3 grid, dim3 block, size_t shared_bytes, const void* kernel) {
  std::string why;
  const unsigned long long threads = static_cast<unsigned long long>(block.x) * block.y * block.z;
  const unsigned bd[3] = {block.x, block.y, block.z};
  const unsigned gd[3] = {grid.x, grid.y, grid.z};
  if (threads > kMaxThreadsPerBlock)
    why = "block " + dims(block) + " has " + std::to_string(threads) +
          " threads; an H100 allows 1024";
  for (int i = 0; i < 3 && why.empty(); ++i) {
    if (bd[i] == 0 || bd[i] > kMaxBlockDim[i])
      why = "block " + dims(block) + " is outside an H100's limits (1 to (1024,1024,64))";
    else if (gd[i] == 0 || gd[i] > kMaxGridDim[i])
      why = "grid " + dims(grid) + " is outside an H100's limits (1 to (2^31-1,65535,65535))";
  }
  if (why.empty() && shared_bytes > kMaxDynamicShared)
    why = std::to_string(shared_bytes) +
          " bytes of dynamic shared memory; an H100 allows 232448 (227 KiB)";
  if (!why.empty()) {
    t_last_message = "launch refused: " + why;
    set_last_error(cudaErrorInvalidConfiguration);
    return cudaErrorInvalidConfiguration;
  }
  if (shared_bytes > kDefaultDynamicShared && shared_bytes > max_dynamic_shared(kernel)) {
    why = std::to_string(shared_bytes) +
          " bytes of dynamic shared memory without cudaFuncSetAttribute(kernel, "
          "cudaFuncAttributeMaxDynamicSharedMemorySize, n >= " +
          std::to_string(shared_bytes) + ") (49152, 48 KiB, without it; set to " +
          std::to_string(max_dynamic_shared(kernel)) + ")";
    t_last_message = "launch refused: " + why;
    set_last_error(cudaErrorInvalidValue);
    return cudaErrorInvalidValue;
  }
  if (t_fiber) {
    t_last_message = "launch from inside a kernel (dynamic parallelism) is not emulated";
    set_last_error(cudaErrorLaunchFailure);
    return cudaErrorLaunchFailure;
  }
  return cudaSuccess;
}

// Runs every thread of the grid now, on the calling thread.
cudaError_t run_grid(dim3 grid, dim3 block, size_t shared_bytes, void (*body)(void*), void* ctx) {
  Scheduler* sp = scheduler();
  if (!sp) {
    t_last_message = "could not map the emulator's fiber stacks";
    set_last_error(cudaErrorLaunchOutOfResources);
    return cudaErrorLaunchOutOfResources;
  }
  Scheduler& s = *sp;
  s.body = body;
  s.ctx = ctx;
  s.count = block.x * block.y * block.z;
  s.error.clear();
  s.dynamic.assign(shared_bytes + 16, 0xff);
  BlockState saved = t_block;
  t_block.block_dim = block;
  t_block.grid_dim = grid;
  bool ok = true;
  for (unsigned z = 0; z < grid.z && ok; ++z)
    for (unsigned y = 0; y < grid.y && ok; ++y)
      for (unsigned x = 0; x < grid.x && ok; ++x) {
        t_block.block_idx = uint3{x, y, z};
        ok = run_block(s);
      }
  t_block = saved;
  if (!ok) {
    t_last_message = s.error;
    std::fprintf(stderr, "CUDA emulator: kernel failed: %s\n", s.error.c_str());
    set_last_error(cudaErrorLaunchFailure);
    return cudaErrorLaunchFailure;
  }
  return cudaSuccess;
}

}  // namespace

cudaError_t launch_grid(dim3 grid, dim3 block, size_t shared_bytes, cudaStream_t stream,
                        void (*body)(void*), void* ctx) {
  return launch_grid(grid, block, shared_bytes, stream, body, ctx, nullptr);
}

cudaError_t launch_grid(dim3 grid, dim3 block, size_t shared_bytes, cudaStream_t stream,
                        void (*body)(void*), void* ctx, const void* kernel) {
  const cudaError_t e = validate(grid, block, shared_bytes, kernel);
  if (e != cudaSuccess) return e;
  // The context lives on the caller's stack: the stream's earlier work runs
  // first, then this launch, before the call returns.
  return run_on_stream_now(stream, [&] { return run_grid(grid, block, shared_bytes, body, ctx); });
}

cudaError_t launch_grid_owned(dim3 grid, dim3 block, size_t shared_bytes, cudaStream_t stream,
                              std::function<void()> body, const void* kernel) {
  const cudaError_t e = validate(grid, block, shared_bytes, kernel);
  if (e != cudaSuccess) return e;
  auto fn = std::make_shared<std::function<void()>>(std::move(body));
  return submit(stream, [grid, block, shared_bytes, fn] {
    return run_grid(
        grid, block, shared_bytes, [](void* c) { (*static_cast<std::function<void()>*>(c))(); },
        fn.get());
  });
}

const char* last_launch_message() { return t_last_message.c_str(); }

}  // namespace chainerc::cuda::emu
