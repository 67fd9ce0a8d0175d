// The host side of the CUDA emulator: the CUDA runtime API subset chainerc
// uses (include/cuda_runtime_api.h), cuBLAS's GEMM over OpenBLAS
// (include/cublas_v2.h) and a host cuRAND (include/curand.h).
#include <cblas.h>

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "cuda_emulation.h"
#include "include/cublas_v2.h"
#include "include/cuda_runtime_api.h"
#include "include/curand.h"

// ---- streams, events and graphs ----
//
// Each stream is an in-order queue. Work runs at once when nothing queued on
// its stream waits (the usual case: results as soon as the call returns);
// otherwise it waits in the queue: behind an event of another stream that has
// not completed (cudaStreamWaitEvent), or on a stream a test holds
// (emu::hold_stream: a GPU that has not reached that work yet). Completion is
// counted per stream (work issued, work done), so an event completes when
// the work before its record has run, and cudaEventQuery can say
// cudaErrorNotReady. The legacy default stream (null) and the blocking
// streams (cudaStreamDefault) wait for each other; cudaStreamNonBlocking
// streams wait for nothing implicitly. Synchronising calls run what they wait
// for (holds or not). A stream under capture records its work into a graph
// instead of running it; cudaGraphLaunch queues the recorded work again.

struct Capture {
  std::vector<std::function<cudaError_t()>> work;
  cudaStreamCaptureMode mode;
  std::thread::id thread;
  cudaError_t invalid = cudaSuccess;  // the first refused call
};

struct CUstream_st {
  explicit CUstream_st(int d) : device(d) {}
  int device;
  unsigned flags = cudaStreamDefault;
  bool legacy = false;
  bool held = false;
  uint64_t issued = 0, done = 0;
  struct Item {
    std::function<cudaError_t()> work;  // empty: a wait for `after`
    CUstream_st* after = nullptr;
    uint64_t after_done = 0;
  };
  std::deque<Item> queue;
  cudaError_t async_error = cudaSuccess;  // of work that ran later than its call
  Capture* capture = nullptr;
};
struct CUevent_st {
  int device;
  CUstream_st* stream = nullptr;  // where last recorded (null: complete)
  uint64_t done_at = 0;           // complete once stream->done reaches it
};
struct CUgraph_st {
  std::vector<std::function<cudaError_t()>> work;
};
struct CUgraphExec_st {
  std::shared_ptr<const std::vector<std::function<cudaError_t()>>> work;
};

struct cublasContext {
  int device;
  cudaStream_t stream;
  void* workspace;
  size_t workspace_bytes;
  cublasMath_t math = CUBLAS_DEFAULT_MATH;
};
struct curandGenerator_st {
  int device;
  unsigned long long seed;
  unsigned long long offset;
  cudaStream_t stream = nullptr;
};

namespace chainerc::cuda::emu {
namespace {

constexpr int kDevices = 2;
constexpr size_t kDeviceMemory = size_t{80} << 30;  // an H100's 80 GB

struct Allocation {
  size_t bytes;
  int device;  // -1: page-locked host memory
};

struct Runtime {
  std::mutex mutex;
  std::map<const char*, Allocation> allocations;  // by start address
  size_t allocated[kDevices] = {};
  std::atomic<bool> context[kDevices] = {};
};

Runtime& rt() {
  static Runtime* r = new Runtime;  // never destroyed: used during static teardown
  return *r;
}

thread_local cudaError_t t_last_error = cudaSuccess;
thread_local int t_device = 0;

cudaError_t fail(cudaError_t e) {
  t_last_error = e;
  return e;
}

void touch(int device) { rt().context[device].store(true); }

// The allocation that holds [p, p + n), or null.
const Allocation* find(const void* p, size_t n, const char** base) {
  Runtime& r = rt();
  const char* c = static_cast<const char*>(p);
  auto it = r.allocations.upper_bound(c);
  if (it == r.allocations.begin()) return nullptr;
  --it;
  if (c < it->first || c + n > it->first + it->second.bytes) return nullptr;
  if (base) *base = it->first;
  return &it->second;
}

// A copy's pointers: device or pinned memory must hold the whole range.
cudaError_t check_range(const void* p, size_t n) {
  std::lock_guard<std::mutex> lock(rt().mutex);
  Runtime& r = rt();
  const char* c = static_cast<const char*>(p);
  auto it = r.allocations.upper_bound(c);
  if (it == r.allocations.begin()) return cudaSuccess;  // host memory
  --it;
  if (c >= it->first + it->second.bytes) return cudaSuccess;  // host memory
  return c + n <= it->first + it->second.bytes ? cudaSuccess : cudaErrorInvalidValue;
}

bool valid_stream(cudaStream_t s) { return !s || (s->device >= 0 && s->device < kDevices); }

}  // namespace

bool context_created(int device) {
  return device >= 0 && device < kDevices && rt().context[device].load();
}

int device_of(const void* ptr, size_t* bytes_left) {
  std::lock_guard<std::mutex> lock(rt().mutex);
  const char* base = nullptr;
  const Allocation* a = find(ptr, 1, &base);
  if (!a || a->device < 0) return -1;
  if (bytes_left)
    *bytes_left = a->bytes - static_cast<size_t>(static_cast<const char*>(ptr) - base);
  return a->device;
}

size_t bytes_allocated(int device) {
  std::lock_guard<std::mutex> lock(rt().mutex);
  return device >= 0 && device < kDevices ? rt().allocated[device] : 0;
}

void set_last_error(cudaError_t e) { t_last_error = e; }

}  // namespace chainerc::cuda::emu

using namespace chainerc::cuda::emu;

const char* cudaGetErrorName(cudaError_t e) {
  switch (e) {
    case cudaSuccess:
      return "cudaSuccess";
    case cudaErrorInvalidValue:
      return "cudaErrorInvalidValue";
    case cudaErrorMemoryAllocation:
      return "cudaErrorMemoryAllocation";
    case cudaErrorInitializationError:
      return "cudaErrorInitializationError";
    case cudaErrorInvalidConfiguration:
      return "cudaErrorInvalidConfiguration";
    case cudaErrorInvalidDevicePointer:
      return "cudaErrorInvalidDevicePointer";
    case cudaErrorInvalidMemcpyDirection:
      return "cudaErrorInvalidMemcpyDirection";
    case cudaErrorNoDevice:
      return "cudaErrorNoDevice";
    case cudaErrorInvalidDevice:
      return "cudaErrorInvalidDevice";
    case cudaErrorInvalidResourceHandle:
      return "cudaErrorInvalidResourceHandle";
    case cudaErrorNotReady:
      return "cudaErrorNotReady";
    case cudaErrorIllegalAddress:
      return "cudaErrorIllegalAddress";
    case cudaErrorLaunchOutOfResources:
      return "cudaErrorLaunchOutOfResources";
    case cudaErrorLaunchFailure:
      return "cudaErrorLaunchFailure";
    case cudaErrorIllegalState:
      return "cudaErrorIllegalState";
    case cudaErrorStreamCaptureUnsupported:
      return "cudaErrorStreamCaptureUnsupported";
    case cudaErrorStreamCaptureInvalidated:
      return "cudaErrorStreamCaptureInvalidated";
    case cudaErrorStreamCaptureIsolation:
      return "cudaErrorStreamCaptureIsolation";
    case cudaErrorStreamCaptureImplicit:
      return "cudaErrorStreamCaptureImplicit";
    case cudaErrorStreamCaptureWrongThread:
      return "cudaErrorStreamCaptureWrongThread";
  }
  return "cudaErrorUnknown";
}

const char* cudaGetErrorString(cudaError_t e) {
  switch (e) {
    case cudaSuccess:
      return "no error";
    case cudaErrorInvalidValue:
      return "invalid argument";
    case cudaErrorMemoryAllocation:
      return "out of memory";
    case cudaErrorInvalidConfiguration:
      return "invalid configuration argument";
    case cudaErrorInvalidDevice:
      return "invalid device ordinal";
    case cudaErrorInvalidResourceHandle:
      return "invalid resource handle";
    case cudaErrorLaunchFailure:
      return "unspecified launch failure";
    default:
      return cudaGetErrorName(e);
  }
}

cudaError_t cudaGetLastError() {
  cudaError_t e = t_last_error;
  t_last_error = cudaSuccess;
  return e;
}
cudaError_t cudaPeekAtLastError() { return t_last_error; }

cudaError_t cudaGetDeviceCount(int* count) {
  if (!count) return fail(cudaErrorInvalidValue);
  const char* env = std::getenv("CH_EMULATED_DEVICES");  // 0 to see the no-device paths
  *count = env && *env ? std::atoi(env) : kDevices;
  if (*count < 0 || *count > kDevices) *count = kDevices;
  if (*count == 0) return fail(cudaErrorNoDevice);
  return cudaSuccess;
}

cudaError_t cudaGetDevice(int* device) {
  if (!device) return fail(cudaErrorInvalidValue);
  *device = t_device;
  return cudaSuccess;
}

cudaError_t cudaSetDevice(int device) {
  if (device < 0 || device >= kDevices) return fail(cudaErrorInvalidDevice);
  t_device = device;
  touch(device);  // CUDA 12: cudaSetDevice initializes the device's primary context
  return cudaSuccess;
}

cudaError_t cudaDeviceGetAttribute(int* value, cudaDeviceAttr attr, int device) {
  if (!value) return fail(cudaErrorInvalidValue);
  if (device < 0 || device >= kDevices) return fail(cudaErrorInvalidDevice);
  switch (attr) {
    case cudaDevAttrMaxThreadsPerBlock:
      *value = 1024;
      break;
    case cudaDevAttrMaxSharedMemoryPerBlock:
      *value = 48 * 1024;
      break;
    case cudaDevAttrWarpSize:
      *value = 32;
      break;
    case cudaDevAttrMultiProcessorCount:
      *value = 132;
      break;
    case cudaDevAttrComputeCapabilityMajor:
      *value = 9;
      break;
    case cudaDevAttrComputeCapabilityMinor:
      *value = 0;
      break;
    case cudaDevAttrMaxSharedMemoryPerBlockOptin:
      *value = 227 * 1024;
      break;
    default:
      return fail(cudaErrorInvalidValue);
  }
  return cudaSuccess;
}

namespace {
// Calls that make the host wait for a device on a GPU (counted for the tests
// of issue 46: a training step must make none).
std::atomic<uint64_t> g_host_syncs{0};
void count_sync() { g_host_syncs.fetch_add(1, std::memory_order_relaxed); }
}  // namespace

cudaError_t cudaFuncSetAttribute(const void* func, enum cudaFuncAttribute attr, int value) {
  if (!func || attr != cudaFuncAttributeMaxDynamicSharedMemorySize || value < 0 ||
      value > 227 * 1024)
    return fail(cudaErrorInvalidValue);
  chainerc::cuda::emu::set_max_dynamic_shared(func, static_cast<size_t>(value));
  return cudaSuccess;
}

namespace {

std::recursive_mutex& sched_mutex() {
  static auto* m = new std::recursive_mutex;  // never destroyed
  return *m;
}
std::vector<CUstream_st*>& all_streams() {
  static auto* v = [] {
    auto* r = new std::vector<CUstream_st*>;
    for (int d = 0; d < kDevices; ++d) {
      auto* s = new CUstream_st(d);
      s->legacy = true;
      r->push_back(s);
    }
    return r;
  }();
  return *v;
}
CUstream_st* legacy_stream(int device) { return all_streams()[static_cast<size_t>(device)]; }
CUstream_st* resolve(cudaStream_t s) { return s ? s : legacy_stream(t_device); }

thread_local Capture* t_capture = nullptr;  // this thread's capture in progress
thread_local cudaStreamCaptureMode t_capture_mode = cudaStreamCaptureModeGlobal;
std::atomic<uint64_t> g_graph_launches{0}, g_graph_work{0};

// Whether this thread's capture forbids calls that are not stream-ordered
// (cudaMalloc, synchronisations): they then invalidate it.
cudaError_t refuse_in_capture(cudaError_t why = cudaErrorStreamCaptureUnsupported) {
  Capture* c = t_capture;
  if (!c || c->mode == cudaStreamCaptureModeRelaxed ||
      t_capture_mode == cudaStreamCaptureModeRelaxed)
    return cudaSuccess;
  if (c->invalid == cudaSuccess) c->invalid = why;
  return fail(why);
}

// Runs `s`'s queue until s->done reaches `upto`. Without `force` it stops at
// a hold or at a wait whose event has not completed; with it, it runs what
// the wait needs first.
void drain(CUstream_st* s, uint64_t upto, bool force) {
  while (s->done < upto && !s->queue.empty()) {
    if (s->held && !force) return;
    CUstream_st::Item& front = s->queue.front();
    if (front.after && front.after->done < front.after_done) {
      if (!force) return;
      drain(front.after, front.after_done, true);
    }
    CUstream_st::Item item = std::move(front);
    s->queue.pop_front();
    if (item.work) {
      const cudaError_t e = item.work();
      if (e != cudaSuccess && s->async_error == cudaSuccess) s->async_error = e;
    }
    ++s->done;
  }
}
void drain_all(CUstream_st* s, bool force) { drain(s, s->issued, force); }

// Lets every stream run what no longer waits.
void pump() {
  for (bool progress = true; progress;) {
    progress = false;
    for (CUstream_st* s : all_streams()) {
      if (s->queue.empty() || s->held || s->device < 0) continue;
      const uint64_t before = s->done;
      drain_all(s, false);
      progress = progress || s->done != before;
    }
  }
}

// The legacy stream and the blocking streams of a device wait for each
// other: before work on one, the other's queued work runs.
void implicit_order(CUstream_st* s) {
  if (s->flags & cudaStreamNonBlocking) return;
  for (CUstream_st* o : all_streams())
    if (o != s && o->device == s->device && !(o->flags & cudaStreamNonBlocking) &&
        (s->legacy || o->legacy) && !o->queue.empty())
      drain_all(o, true);
}

// Work on the legacy stream while this thread captures: on a GPU it is not
// captured, so the graph would miss it; refused here, so that engine work
// that escapes the capturing stream is found.
cudaError_t legacy_in_capture(CUstream_st* s) {
  return s->legacy ? refuse_in_capture(cudaErrorStreamCaptureImplicit) : cudaSuccess;
}

}  // namespace

namespace chainerc::cuda::emu {

cudaError_t submit(cudaStream_t stream, std::function<cudaError_t()> work) {
  std::lock_guard<std::recursive_mutex> lock(sched_mutex());
  if (!valid_stream(stream)) return fail(cudaErrorInvalidResourceHandle);
  CUstream_st* s = resolve(stream);
  if (cudaError_t e = legacy_in_capture(s)) return e;
  touch(s->device);
  if (s->capture) {
    s->capture->work.push_back(std::move(work));
    return cudaSuccess;
  }
  implicit_order(s);
  ++s->issued;
  if (s->queue.empty() && !s->held) {
    const cudaError_t e = work();
    ++s->done;
    return e == cudaSuccess ? e : fail(e);
  }
  s->queue.push_back({std::move(work)});
  return cudaSuccess;
}

cudaError_t run_on_stream_now(cudaStream_t stream, const std::function<cudaError_t()>& work) {
  std::lock_guard<std::recursive_mutex> lock(sched_mutex());
  if (!valid_stream(stream)) return fail(cudaErrorInvalidResourceHandle);
  CUstream_st* s = resolve(stream);
  if (s->capture) {
    if (s->capture->invalid == cudaSuccess) s->capture->invalid = cudaErrorStreamCaptureUnsupported;
    return fail(cudaErrorStreamCaptureUnsupported);
  }
  if (cudaError_t e = legacy_in_capture(s)) return e;
  implicit_order(s);
  drain_all(s, true);
  ++s->issued;
  const cudaError_t e = work();
  ++s->done;
  pump();
  return e == cudaSuccess ? e : fail(e);
}

void hold_stream(cudaStream_t stream, bool held) {
  std::lock_guard<std::recursive_mutex> lock(sched_mutex());
  resolve(stream)->held = held;
  if (!held) pump();
}

size_t stream_pending(cudaStream_t stream) {
  std::lock_guard<std::recursive_mutex> lock(sched_mutex());
  return resolve(stream)->queue.size();
}

uint64_t graph_launches() { return g_graph_launches.load(); }
uint64_t graph_work_replayed() { return g_graph_work.load(); }

}  // namespace chainerc::cuda::emu

namespace {
// Synchronising calls: refused during this thread's capture; counted.
cudaError_t begin_sync() {
  if (cudaError_t e = refuse_in_capture()) return e;
  count_sync();
  return cudaSuccess;
}
cudaError_t take_async_error(CUstream_st* s) {
  const cudaError_t e = s->async_error;
  s->async_error = cudaSuccess;
  return e == cudaSuccess ? e : fail(e);
}
}  // namespace

cudaError_t cudaDeviceSynchronize() {
  std::lock_guard<std::recursive_mutex> lock(sched_mutex());
  touch(t_device);
  if (cudaError_t e = begin_sync()) return e;
  cudaError_t first = cudaSuccess;
  for (CUstream_st* s : all_streams())
    if (s->device == t_device) {
      drain_all(s, true);
      const cudaError_t e = take_async_error(s);
      if (first == cudaSuccess) first = e;
    }
  pump();
  return first;
}

cudaError_t cudaMalloc(void** ptr, size_t size) {
  if (!ptr) return fail(cudaErrorInvalidValue);
  if (cudaError_t e = refuse_in_capture()) return e;
  touch(t_device);
  *ptr = nullptr;
  if (size == 0) return cudaSuccess;
  Runtime& r = rt();
  std::lock_guard<std::mutex> lock(r.mutex);
  if (size > kDeviceMemory - r.allocated[t_device]) return fail(cudaErrorMemoryAllocation);
  void* p = std::aligned_alloc(256, (size + 255) / 256 * 256);  // cudaMalloc aligns to 256
  if (!p) return fail(cudaErrorMemoryAllocation);
  r.allocations[static_cast<const char*>(p)] = Allocation{size, t_device};
  r.allocated[t_device] += size;
  *ptr = p;
  return cudaSuccess;
}

cudaError_t cudaFree(void* ptr) {
  touch(t_device);
  if (!ptr) return cudaSuccess;
  if (cudaError_t e = refuse_in_capture()) return e;
  {
    // cudaFree waits for the device's work, as on a GPU.
    std::lock_guard<std::recursive_mutex> lock(sched_mutex());
    const int owner = device_of(ptr, nullptr);
    for (CUstream_st* s : all_streams())
      if (s->device == owner) drain_all(s, true);
    pump();
  }
  Runtime& r = rt();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto it = r.allocations.find(static_cast<const char*>(ptr));
  if (it == r.allocations.end() || it->second.device < 0) return fail(cudaErrorInvalidValue);
  r.allocated[it->second.device] -= it->second.bytes;
  r.allocations.erase(it);
  std::free(ptr);
  return cudaSuccess;
}

cudaError_t cudaHostAlloc(void** ptr, size_t size, unsigned int) {
  if (!ptr) return fail(cudaErrorInvalidValue);
  if (cudaError_t e = refuse_in_capture()) return e;
  touch(t_device);
  void* p = std::aligned_alloc(4096, (size + 4095) / 4096 * 4096);
  if (!p) return fail(cudaErrorMemoryAllocation);
  std::lock_guard<std::mutex> lock(rt().mutex);
  rt().allocations[static_cast<const char*>(p)] = Allocation{size, -1};
  *ptr = p;
  return cudaSuccess;
}

cudaError_t cudaFreeHost(void* ptr) {
  if (!ptr) return cudaSuccess;
  Runtime& r = rt();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto it = r.allocations.find(static_cast<const char*>(ptr));
  if (it == r.allocations.end() || it->second.device >= 0) return fail(cudaErrorInvalidValue);
  r.allocations.erase(it);
  std::free(ptr);
  return cudaSuccess;
}

namespace {
cudaError_t copy_bytes(void* dst, const void* src, size_t count, cudaMemcpyKind kind);
cudaError_t copy_peer(void* dst, int dst_device, const void* src, int src_device, size_t count);

// Host memory that is neither device nor page-locked memory.
bool pageable(const void* p) {
  std::lock_guard<std::mutex> lock(rt().mutex);
  return find(p, 1, nullptr) == nullptr;
}
}  // namespace

// cudaMemcpy waits for the device (the legacy default stream's work before
// it, with the blocking streams', and the copy itself); not for the
// non-blocking streams. The Async forms are queued.
cudaError_t cudaMemcpy(void* dst, const void* src, size_t count, cudaMemcpyKind kind) {
  std::lock_guard<std::recursive_mutex> lock(sched_mutex());
  if (cudaError_t e = begin_sync()) return e;
  CUstream_st* s = legacy_stream(t_device);
  implicit_order(s);
  drain_all(s, true);
  const cudaError_t e = copy_bytes(dst, src, count, kind);
  pump();
  return e;
}

namespace {
cudaError_t copy_bytes(void* dst, const void* src, size_t count, cudaMemcpyKind kind) {
  touch(t_device);
  if (count == 0) return cudaSuccess;
  if (!dst || !src || static_cast<int>(kind) < 0 || kind > cudaMemcpyDefault)
    return fail(cudaErrorInvalidValue);
  if (check_range(dst, count) != cudaSuccess || check_range(src, count) != cudaSuccess)
    return fail(cudaErrorInvalidValue);
  std::memmove(dst, src, count);
  return cudaSuccess;
}
}  // namespace

// As the runtime documents: with pageable host memory the call waits (for
// the stream's earlier work, then the copy), so the host may reuse its
// buffer on return; with page-locked or device memory it is queued.
cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t count, cudaMemcpyKind kind,
                            cudaStream_t stream) {
  std::lock_guard<std::recursive_mutex> lock(sched_mutex());
  if (!valid_stream(stream)) return fail(cudaErrorInvalidResourceHandle);
  if (count == 0) return cudaSuccess;
  if (!dst || !src || static_cast<int>(kind) < 0 || kind > cudaMemcpyDefault)
    return fail(cudaErrorInvalidValue);
  if (check_range(dst, count) != cudaSuccess || check_range(src, count) != cudaSuccess)
    return fail(cudaErrorInvalidValue);
  if (pageable(dst) || pageable(src)) {
    if (resolve(stream)->capture) {
      Capture* c = resolve(stream)->capture;
      if (c->invalid == cudaSuccess) c->invalid = cudaErrorStreamCaptureUnsupported;
      return fail(cudaErrorStreamCaptureUnsupported);
    }
    if (cudaError_t e = begin_sync()) return e;
    return run_on_stream_now(stream, [=] { return copy_bytes(dst, src, count, kind); });
  }
  return submit(stream, [=] { return copy_bytes(dst, src, count, kind); });
}

cudaError_t cudaMemcpyPeer(void* dst, int dst_device, const void* src, int src_device,
                           size_t count) {
  std::lock_guard<std::recursive_mutex> lock(sched_mutex());
  if (cudaError_t e = begin_sync()) return e;
  for (int d : {dst_device, src_device})
    if (d >= 0 && d < kDevices) {
      implicit_order(legacy_stream(d));
      drain_all(legacy_stream(d), true);
    }
  return copy_peer(dst, dst_device, src, src_device, count);
}

namespace {
cudaError_t copy_peer(void* dst, int dst_device, const void* src, int src_device, size_t count) {
  if (dst_device < 0 || dst_device >= kDevices || src_device < 0 || src_device >= kDevices)
    return fail(cudaErrorInvalidDevice);
  size_t left = 0;
  if (count && (device_of(dst, &left) != dst_device || left < count ||
                device_of(src, &left) != src_device || left < count))
    return fail(cudaErrorInvalidValue);
  return copy_bytes(dst, src, count, cudaMemcpyDefault);
}
}  // namespace

cudaError_t cudaMemcpyPeerAsync(void* dst, int dst_device, const void* src, int src_device,
                                size_t count, cudaStream_t stream) {
  if (!valid_stream(stream)) return fail(cudaErrorInvalidResourceHandle);
  if (dst_device < 0 || dst_device >= kDevices || src_device < 0 || src_device >= kDevices)
    return fail(cudaErrorInvalidDevice);
  return submit(stream, [=] { return copy_peer(dst, dst_device, src, src_device, count); });
}

cudaError_t cudaMemsetAsync(void* ptr, int value, size_t count, cudaStream_t stream) {
  if (!valid_stream(stream)) return fail(cudaErrorInvalidResourceHandle);
  if (count && check_range(ptr, count) != cudaSuccess) return fail(cudaErrorInvalidValue);
  if (!count) return cudaSuccess;
  return submit(stream, [=] {
    std::memset(ptr, value, count);
    return cudaSuccess;
  });
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned int flags) {
  if (!stream) return fail(cudaErrorInvalidValue);
  std::lock_guard<std::recursive_mutex> lock(sched_mutex());
  touch(t_device);
  auto* s = new CUstream_st(t_device);
  s->flags = flags;
  all_streams().push_back(s);
  *stream = s;
  return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
  std::lock_guard<std::recursive_mutex> lock(sched_mutex());
  if (!valid_stream(stream)) return fail(cudaErrorInvalidResourceHandle);
  CUstream_st* s = resolve(stream);
  if (s->capture) {
    if (s->capture->invalid == cudaSuccess) s->capture->invalid = cudaErrorStreamCaptureUnsupported;
    return fail(cudaErrorStreamCaptureUnsupported);
  }
  if (cudaError_t e = begin_sync()) return e;
  implicit_order(s);
  drain_all(s, true);
  pump();
  return take_async_error(s);
}

cudaError_t cudaStreamDestroy(cudaStream_t stream) {
  std::lock_guard<std::recursive_mutex> lock(sched_mutex());
  if (!stream || !valid_stream(stream) || stream->legacy)
    return fail(cudaErrorInvalidResourceHandle);
  drain_all(stream, true);  // its work completes, as on a GPU
  stream->device = -1;      // a second destroy is an error, not a crash (memory kept)
  pump();
  return cudaSuccess;
}

cudaError_t cudaEventCreateWithFlags(cudaEvent_t* event, unsigned int) {
  if (!event) return fail(cudaErrorInvalidValue);
  touch(t_device);
  *event = new CUevent_st{t_device};
  return cudaSuccess;
}

cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
  std::lock_guard<std::recursive_mutex> lock(sched_mutex());
  if (!event || event->device < 0 || !valid_stream(stream))
    return fail(cudaErrorInvalidResourceHandle);
  // The real runtime requires the stream and the event on the same device.
  CUstream_st* s = resolve(stream);
  if (s->device != event->device) return fail(cudaErrorInvalidResourceHandle);
  if (cudaError_t e = legacy_in_capture(s)) return e;
  if (s->capture) {  // an event inside a graph: complete for work outside it
    event->stream = nullptr;
    return cudaSuccess;
  }
  implicit_order(s);
  event->stream = s;
  event->done_at = s->issued;
  return cudaSuccess;
}

cudaError_t cudaEventQuery(cudaEvent_t event) {
  std::lock_guard<std::recursive_mutex> lock(sched_mutex());
  if (!event || event->device < 0) return fail(cudaErrorInvalidResourceHandle);
  // cudaErrorNotReady is an answer, not an error: the last error is left.
  return !event->stream || event->stream->done >= event->done_at ? cudaSuccess : cudaErrorNotReady;
}

cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int) {
  std::lock_guard<std::recursive_mutex> lock(sched_mutex());
  if (!event || event->device < 0 || !valid_stream(stream))
    return fail(cudaErrorInvalidResourceHandle);
  CUstream_st* s = resolve(stream);
  const bool complete = !event->stream || event->stream->done >= event->done_at;
  if (s->capture) {
    // A capture cannot wait for work outside it (cudaErrorStreamCaptureIsolation).
    if (complete) return cudaSuccess;
    if (s->capture->invalid == cudaSuccess) s->capture->invalid = cudaErrorStreamCaptureIsolation;
    return fail(cudaErrorStreamCaptureIsolation);
  }
  if (complete) return cudaSuccess;
  ++s->issued;
  s->queue.push_back({{}, event->stream, event->done_at});
  return cudaSuccess;
}

cudaError_t cudaEventSynchronize(cudaEvent_t event) {
  std::lock_guard<std::recursive_mutex> lock(sched_mutex());
  if (!event || event->device < 0) return fail(cudaErrorInvalidResourceHandle);
  if (cudaError_t e = begin_sync()) return e;
  if (event->stream) drain(event->stream, event->done_at, true);
  pump();
  return cudaSuccess;
}

cudaError_t cudaEventDestroy(cudaEvent_t event) {
  if (!event || event->device < 0) return fail(cudaErrorInvalidResourceHandle);
  delete event;
  return cudaSuccess;
}

cudaError_t cudaThreadExchangeStreamCaptureMode(cudaStreamCaptureMode* mode) {
  if (!mode) return fail(cudaErrorInvalidValue);
  std::swap(*mode, t_capture_mode);
  return cudaSuccess;
}

cudaError_t cudaStreamBeginCapture(cudaStream_t stream, cudaStreamCaptureMode mode) {
  std::lock_guard<std::recursive_mutex> lock(sched_mutex());
  if (!valid_stream(stream)) return fail(cudaErrorInvalidResourceHandle);
  if (!stream) return fail(cudaErrorStreamCaptureUnsupported);  // not the legacy stream
  if (stream->capture || t_capture) return fail(cudaErrorIllegalState);
  stream->capture = new Capture{{}, mode, std::this_thread::get_id()};
  t_capture = stream->capture;
  return cudaSuccess;
}

cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t* graph) {
  std::lock_guard<std::recursive_mutex> lock(sched_mutex());
  if (!graph) return fail(cudaErrorInvalidValue);
  *graph = nullptr;
  if (!stream || !valid_stream(stream)) return fail(cudaErrorInvalidResourceHandle);
  Capture* c = stream->capture;
  if (!c) return fail(cudaErrorIllegalState);
  if (c->mode != cudaStreamCaptureModeRelaxed && c->thread != std::this_thread::get_id())
    return fail(cudaErrorStreamCaptureWrongThread);
  stream->capture = nullptr;
  if (t_capture == c) t_capture = nullptr;
  const cudaError_t invalid = c->invalid;
  if (invalid == cudaSuccess) *graph = new CUgraph_st{std::move(c->work)};
  delete c;
  return invalid == cudaSuccess ? cudaSuccess : fail(cudaErrorStreamCaptureInvalidated);
}

cudaError_t cudaStreamIsCapturing(cudaStream_t stream, cudaStreamCaptureStatus* status) {
  std::lock_guard<std::recursive_mutex> lock(sched_mutex());
  if (!status) return fail(cudaErrorInvalidValue);
  if (!valid_stream(stream)) return fail(cudaErrorInvalidResourceHandle);
  const Capture* c = resolve(stream)->capture;
  *status = !c                          ? cudaStreamCaptureStatusNone
            : c->invalid == cudaSuccess ? cudaStreamCaptureStatusActive
                                        : cudaStreamCaptureStatusInvalidated;
  return cudaSuccess;
}

cudaError_t cudaGraphInstantiate(cudaGraphExec_t* exec, cudaGraph_t graph, unsigned long long) {
  if (!exec || !graph) return fail(cudaErrorInvalidValue);
  *exec = new CUgraphExec_st{
      std::make_shared<const std::vector<std::function<cudaError_t()>>>(graph->work)};
  return cudaSuccess;
}

cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t stream) {
  if (!exec) return fail(cudaErrorInvalidResourceHandle);
  auto work = exec->work;
  g_graph_launches.fetch_add(1);
  return submit(stream, [work] {
    for (const auto& w : *work) {
      g_graph_work.fetch_add(1, std::memory_order_relaxed);
      if (cudaError_t e = w()) return e;
    }
    return cudaSuccess;
  });
}

cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec) {
  if (!exec) return fail(cudaErrorInvalidResourceHandle);
  delete exec;
  return cudaSuccess;
}

cudaError_t cudaGraphDestroy(cudaGraph_t graph) {
  if (!graph) return fail(cudaErrorInvalidResourceHandle);
  delete graph;
  return cudaSuccess;
}

// ---- cuBLAS ----

cublasStatus_t cublasCreate(cublasHandle_t* handle) {
  if (!handle) return CUBLAS_STATUS_INVALID_VALUE;
  touch(t_device);
  *handle = new cublasContext{t_device, nullptr, nullptr, 0};
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasDestroy(cublasHandle_t handle) {
  if (!handle) return CUBLAS_STATUS_NOT_INITIALIZED;
  delete handle;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetStream(cublasHandle_t handle, cudaStream_t stream) {
  if (!handle) return CUBLAS_STATUS_NOT_INITIALIZED;
  handle->stream = stream;
  // As documented for cuBLAS: setting the stream resets the workspace set by
  // cublasSetWorkspace to cuBLAS's own default pool.
  handle->workspace = nullptr;
  handle->workspace_bytes = 0;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetWorkspace(cublasHandle_t handle, void* workspace, size_t bytes) {
  if (!handle) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (bytes && (reinterpret_cast<uintptr_t>(workspace) % 256) != 0)
    return CUBLAS_STATUS_INVALID_VALUE;
  handle->workspace = workspace;
  handle->workspace_bytes = bytes;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetMathMode(cublasHandle_t handle, cublasMath_t mode) {
  if (!handle) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (mode != CUBLAS_DEFAULT_MATH && mode != CUBLAS_TENSOR_OP_MATH &&
      mode != CUBLAS_PEDANTIC_MATH && mode != CUBLAS_TF32_TENSOR_OP_MATH)
    return CUBLAS_STATUS_INVALID_VALUE;
  handle->math = mode;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasGetMathMode(cublasHandle_t handle, cublasMath_t* mode) {
  if (!handle) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (!mode) return CUBLAS_STATUS_INVALID_VALUE;
  *mode = handle->math;
  return CUBLAS_STATUS_SUCCESS;
}

const char* cublasGetStatusString(cublasStatus_t s) {
  switch (s) {
    case CUBLAS_STATUS_SUCCESS:
      return "the operation completed successfully";
    case CUBLAS_STATUS_NOT_INITIALIZED:
      return "the library was not initialized";
    case CUBLAS_STATUS_ALLOC_FAILED:
      return "the resource allocation failed";
    case CUBLAS_STATUS_INVALID_VALUE:
      return "an invalid numeric value was used as an argument";
    case CUBLAS_STATUS_EXECUTION_FAILED:
      return "the GPU program failed to execute";
    default:
      return "cuBLAS error";
  }
}

namespace chainerc::cuda::emu {
void* cublas_workspace(cublasHandle_t handle, size_t* bytes) {
  if (bytes) *bytes = handle ? handle->workspace_bytes : 0;
  return handle ? handle->workspace : nullptr;
}
}  // namespace chainerc::cuda::emu

namespace {

// cuBLAS's checks of a GEMM's arguments (cublas<t>gemm in the cuBLAS guide),
// then whether the matrices lie in device memory (an illegal address on a GPU).
template <typename T>
cublasStatus_t gemm_checks(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m,
                           int n, int k, const T* alpha, const T* A, int lda, const T* B, int ldb,
                           const T* beta, T* C, int ldc) {
  if (!h) return CUBLAS_STATUS_NOT_INITIALIZED;
  auto op_ok = [](cublasOperation_t t) {
    return t == CUBLAS_OP_N || t == CUBLAS_OP_T || t == CUBLAS_OP_C;
  };
  auto mx = [](int v) { return v > 1 ? v : 1; };
  if (!op_ok(ta) || !op_ok(tb) || m < 0 || n < 0 || k < 0 || !alpha || !beta ||
      lda < mx(ta == CUBLAS_OP_N ? m : k) || ldb < mx(tb == CUBLAS_OP_N ? k : n) || ldc < mx(m))
    return CUBLAS_STATUS_INVALID_VALUE;
  if (m == 0 || n == 0) return CUBLAS_STATUS_SUCCESS;
  auto in_device = [](const void* p, long long elems) {
    size_t left = 0;
    return device_of(p, &left) >= 0 && left >= static_cast<size_t>(elems) * sizeof(T);
  };
  // Elements each matrix spans as stored: (columns - 1) * ld + rows.
  long long a_rows = ta == CUBLAS_OP_N ? m : k, a_cols = ta == CUBLAS_OP_N ? k : m;
  long long b_rows = tb == CUBLAS_OP_N ? k : n, b_cols = tb == CUBLAS_OP_N ? n : k;
  if ((k > 0 && (!in_device(A, (a_cols - 1) * lda + a_rows) ||
                 !in_device(B, (b_cols - 1) * ldb + b_rows))) ||
      !in_device(C, (static_cast<long long>(n) - 1) * ldc + m))
    return CUBLAS_STATUS_EXECUTION_FAILED;
  return CUBLAS_STATUS_SUCCESS;
}

CBLAS_TRANSPOSE cblas_op(cublasOperation_t t) {
  return t == CUBLAS_OP_N ? CblasNoTrans : CblasTrans;
}

// x rounded to TF32 (the tensor cores' input format: float32's exponent, a
// 10-bit mantissa), to nearest, ties to even; infinities and NaN unchanged.
float to_tf32(float x) {
  uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  if ((u & 0x7F800000u) == 0x7F800000u) return x;
  u += 0x0FFFu + ((u >> 13) & 1u);
  u &= 0xFFFFE000u;
  std::memcpy(&x, &u, sizeof u);
  return x;
}

// A stored matrix (rows x cols, leading dimension ld) rounded to TF32.
std::vector<float> tf32_copy(const float* p, long long rows, long long cols, int ld) {
  std::vector<float> r(cols > 0 ? static_cast<size_t>((cols - 1) * ld + rows) : 0);
  for (long long j = 0; j < cols; ++j)
    for (long long i = 0; i < rows; ++i) r[j * ld + i] = to_tf32(p[j * ld + i]);
  return r;
}

}  // namespace

// The checks run at the call, as cuBLAS's; the product is queued on the
// handle's stream (values and math mode taken now, as a captured GEMM keeps
// them).
cublasStatus_t queue_gemm(cublasHandle_t h, std::function<cudaError_t()> work) {
  return chainerc::cuda::emu::submit(h->stream, std::move(work)) == cudaSuccess
             ? CUBLAS_STATUS_SUCCESS
             : CUBLAS_STATUS_EXECUTION_FAILED;
}

cublasStatus_t cublasSgemm(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m,
                           int n, int k, const float* alpha, const float* A, int lda,
                           const float* B, int ldb, const float* beta, float* C, int ldc) {
  cublasStatus_t s = gemm_checks(h, ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
  if (s != CUBLAS_STATUS_SUCCESS || m == 0 || n == 0) return s;
  const float al = *alpha, be = *beta;
  const bool tf32 = h->math == CUBLAS_TF32_TENSOR_OP_MATH && k > 0;
  return queue_gemm(h, [=] {
    if (tf32) {
      const auto a = tf32_copy(A, ta == CUBLAS_OP_N ? m : k, ta == CUBLAS_OP_N ? k : m, lda);
      const auto b = tf32_copy(B, tb == CUBLAS_OP_N ? k : n, tb == CUBLAS_OP_N ? n : k, ldb);
      cblas_sgemm(CblasColMajor, cblas_op(ta), cblas_op(tb), m, n, k, al, a.data(), lda, b.data(),
                  ldb, be, C, ldc);
    } else {
      cblas_sgemm(CblasColMajor, cblas_op(ta), cblas_op(tb), m, n, k, al, A, lda, B, ldb, be, C,
                  ldc);
    }
    return cudaSuccess;
  });
}

cublasStatus_t cublasDgemm(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m,
                           int n, int k, const double* alpha, const double* A, int lda,
                           const double* B, int ldb, const double* beta, double* C, int ldc) {
  cublasStatus_t s = gemm_checks(h, ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
  if (s != CUBLAS_STATUS_SUCCESS || m == 0 || n == 0) return s;
  const double al = *alpha, be = *beta;
  return queue_gemm(h, [=] {
    cblas_dgemm(CblasColMajor, cblas_op(ta), cblas_op(tb), m, n, k, al, A, lda, B, ldb, be, C, ldc);
    return cudaSuccess;
  });
}

template <typename T, typename Gemm>
cublasStatus_t strided_batched(Gemm gemm, cublasHandle_t h, cublasOperation_t ta,
                               cublasOperation_t tb, int m, int n, int k, const T* alpha,
                               const T* A, int lda, long long sa, const T* B, int ldb, long long sb,
                               const T* beta, T* C, int ldc, long long sc, int batch) {
  if (!h) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (batch < 0) return CUBLAS_STATUS_INVALID_VALUE;
  for (int i = 0; i < batch; ++i) {
    const cublasStatus_t s =
        gemm(h, ta, tb, m, n, k, alpha, A + i * sa, lda, B + i * sb, ldb, beta, C + i * sc, ldc);
    if (s != CUBLAS_STATUS_SUCCESS) return s;
  }
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSgemmStridedBatched(cublasHandle_t h, cublasOperation_t ta,
                                         cublasOperation_t tb, int m, int n, int k,
                                         const float* alpha, const float* A, int lda,
                                         long long int sa, const float* B, int ldb,
                                         long long int sb, const float* beta, float* C, int ldc,
                                         long long int sc, int batch) {
  return strided_batched(cublasSgemm, h, ta, tb, m, n, k, alpha, A, lda, sa, B, ldb, sb, beta, C,
                         ldc, sc, batch);
}

cublasStatus_t cublasDgemmStridedBatched(cublasHandle_t h, cublasOperation_t ta,
                                         cublasOperation_t tb, int m, int n, int k,
                                         const double* alpha, const double* A, int lda,
                                         long long int sa, const double* B, int ldb,
                                         long long int sb, const double* beta, double* C, int ldc,
                                         long long int sc, int batch) {
  return strided_batched(cublasDgemm, h, ta, tb, m, n, k, alpha, A, lda, sa, B, ldb, sb, beta, C,
                         ldc, sc, batch);
}

// ---- cuRAND ----

namespace {

uint64_t mix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// Sample `i` after `offset` of the generator with `seed`: 64 random bits.
uint64_t bits(uint64_t seed, uint64_t offset, uint64_t i) { return mix(mix(seed) ^ (offset + i)); }

// The samples are drawn on the generator's stream; the offset advances at
// the call (so a captured generation repeats its numbers, as cuRAND's does).
curandStatus_t queue_random(curandGenerator_t g, std::function<void(uint64_t, uint64_t)> draw,
                            size_t n) {
  const uint64_t seed = g->seed, offset = g->offset;
  g->offset += n;
  return chainerc::cuda::emu::submit(g->stream,
                                     [=] {
                                       draw(seed, offset);
                                       return cudaSuccess;
                                     }) == cudaSuccess
             ? CURAND_STATUS_SUCCESS
             : CURAND_STATUS_LAUNCH_FAILURE;
}

template <typename T>
curandStatus_t uniform(curandGenerator_t g, T* out, size_t n) {
  if (!g) return CURAND_STATUS_NOT_INITIALIZED;
  size_t left = 0;
  if (n && (device_of(out, &left) < 0 || left < n * sizeof(T))) return CURAND_STATUS_LAUNCH_FAILURE;
  return queue_random(
      g,
      [out, n](uint64_t seed, uint64_t offset) {
        for (size_t i = 0; i < n; ++i) {
          uint64_t b = bits(seed, offset, i);
          // (0, 1]: (k + 1) / 2^p for k uniform in [0, 2^p).
          out[i] = sizeof(T) == 4 ? static_cast<T>(static_cast<float>((b >> 40) + 1) * 0x1p-24f)
                                  : static_cast<T>(static_cast<double>((b >> 11) + 1) * 0x1p-53);
        }
      },
      n);
}

template <typename T>
curandStatus_t normal(curandGenerator_t g, T* out, size_t n, T mean, T stddev) {
  if (!g) return CURAND_STATUS_NOT_INITIALIZED;
  if (n % 2) return CURAND_STATUS_LENGTH_NOT_MULTIPLE;
  size_t left = 0;
  if (n && (device_of(out, &left) < 0 || left < n * sizeof(T))) return CURAND_STATUS_LAUNCH_FAILURE;
  return queue_random(
      g,
      [out, n, mean, stddev](uint64_t seed, uint64_t offset) {
        for (size_t i = 0; i < n; i += 2) {
          double u1 = static_cast<double>((bits(seed, offset, i) >> 11) + 1) * 0x1p-53;
          double u2 = static_cast<double>(bits(seed, offset, i + 1) >> 11) * 0x1p-53;
          double r = std::sqrt(-2.0 * std::log(u1)), t = 2.0 * M_PI * u2;
          out[i] = static_cast<T>(mean + stddev * r * std::cos(t));
          out[i + 1] = static_cast<T>(mean + stddev * r * std::sin(t));
        }
      },
      n);
}

}  // namespace

curandStatus_t curandCreateGenerator(curandGenerator_t* g, curandRngType_t) {
  if (!g) return CURAND_STATUS_NOT_INITIALIZED;
  touch(t_device);
  *g = new curandGenerator_st{t_device, 0, 0};
  return CURAND_STATUS_SUCCESS;
}
curandStatus_t curandDestroyGenerator(curandGenerator_t g) {
  if (!g) return CURAND_STATUS_NOT_INITIALIZED;
  delete g;
  return CURAND_STATUS_SUCCESS;
}
curandStatus_t curandSetPseudoRandomGeneratorSeed(curandGenerator_t g, unsigned long long seed) {
  if (!g) return CURAND_STATUS_NOT_INITIALIZED;
  g->seed = seed;
  return CURAND_STATUS_SUCCESS;
}
curandStatus_t curandSetGeneratorOffset(curandGenerator_t g, unsigned long long offset) {
  if (!g) return CURAND_STATUS_NOT_INITIALIZED;
  g->offset = offset;
  return CURAND_STATUS_SUCCESS;
}
curandStatus_t curandSetStream(curandGenerator_t g, cudaStream_t s) {
  if (!g) return CURAND_STATUS_NOT_INITIALIZED;
  if (!valid_stream(s)) return CURAND_STATUS_LAUNCH_FAILURE;
  g->stream = s;
  return CURAND_STATUS_SUCCESS;
}
curandStatus_t curandGenerateUniform(curandGenerator_t g, float* out, size_t n) {
  return uniform(g, out, n);
}
curandStatus_t curandGenerateUniformDouble(curandGenerator_t g, double* out, size_t n) {
  return uniform(g, out, n);
}
curandStatus_t curandGenerateNormal(curandGenerator_t g, float* out, size_t n, float mean,
                                    float stddev) {
  return normal(g, out, n, mean, stddev);
}
curandStatus_t curandGenerateNormalDouble(curandGenerator_t g, double* out, size_t n, double mean,
                                          double stddev) {
  return normal(g, out, n, mean, stddev);
}

namespace chainerc::cuda::emu {
uint64_t host_synchronizations() { return g_host_syncs.load(std::memory_order_relaxed); }
}  // namespace chainerc::cuda::emu
