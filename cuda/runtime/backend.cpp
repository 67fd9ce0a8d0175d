// The CUDA implementation of the core's DeviceBackend.
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "core/device_backend.h"
#include "cuda_util.h"
#include "deferred_errors.h"
#include "fill_kernels.h"
#include "graph.h"
#include "kernels/math.h"
#include "libraries.h"
#include "memory.h"
#include "streams.h"

namespace chainerc::cuda {
namespace {

class CudaRaw final : public RawAllocator {
 public:
  explicit CudaRaw(int32_t device) : device_(device) {}
  void* allocate(size_t nbytes) override {
    DeviceGuard guard(device_);
    void* p = nullptr;
    // cudaMalloc is not stream-ordered: a capture in progress on this thread
    // would be invalidated by it. The new segment belongs to the graph's
    // private pool (caching_allocator.h), so it is safe to make: relaxed.
    cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
    cudaThreadExchangeStreamCaptureMode(&mode);
    cudaError_t e = cudaMalloc(&p, nbytes);
    cudaThreadExchangeStreamCaptureMode(&mode);
    if (e == cudaErrorMemoryAllocation) {
      cudaGetLastError();
      std::lock_guard<std::mutex> lock(mutex_);
      last_ = "cudaMalloc of " + std::to_string(nbytes) + " bytes: " + error_text(e);
      return nullptr;
    }
    check(e, "allocate", "cudaMalloc");
    return p;
  }
  void deallocate(void* ptr, size_t) noexcept override {
    int previous = 0;
    bool switched = cudaGetDevice(&previous) == cudaSuccess && previous != device_ &&
                    cudaSetDevice(device_) == cudaSuccess;
    release_failed(cudaFree(ptr), "cudaFree");  // waits for work on the device
    if (switched) cudaSetDevice(previous);
  }
  std::string last_error() override {
    std::lock_guard<std::mutex> lock(mutex_);
    return last_;
  }
  // Events of blocks used on other streams (record_stream). Where an event
  // cannot be made, the stream is waited for instead (null: nothing pending).
  void* record_event(void* stream) override {
    DeviceGuard guard(device_);
    cudaEvent_t ev = nullptr;
    if (cudaEventCreateWithFlags(&ev, cudaEventDisableTiming) == cudaSuccess) {
      const cudaStream_t s = stream ? static_cast<cudaStream_t>(stream) : engine_stream(device_);
      if (cudaEventRecord(ev, s) == cudaSuccess) return ev;
      cudaEventDestroy(ev);
    }
    cudaGetLastError();
    release_failed(
        cudaStreamSynchronize(stream ? static_cast<cudaStream_t>(stream) : engine_stream(device_)),
        "cudaStreamSynchronize");
    return nullptr;
  }
  bool event_done(void* event) override {
    const cudaError_t e = cudaEventQuery(static_cast<cudaEvent_t>(event));
    if (e == cudaErrorNotReady) {
      cudaGetLastError();  // an answer, not an error: not left for the next call
      return false;
    }
    release_failed(e, "cudaEventQuery");
    return true;
  }
  void event_wait(void* event) override {
    release_failed(cudaEventSynchronize(static_cast<cudaEvent_t>(event)), "cudaEventSynchronize");
  }
  void event_release(void* event) noexcept override {
    release_failed(cudaEventDestroy(static_cast<cudaEvent_t>(event)), "cudaEventDestroy");
  }

 private:
  int32_t device_;
  std::mutex mutex_;
  std::string last_;
};

// Page-locked buffers that host-to-device copies go through (a "pinned
// staging path"): the host data is copied into one, the device copy is
// queued from it, and the buffer is reused once its event says the copy is
// done. So a copy from pageable host memory neither waits for the device nor
// keeps the caller's memory: the source may be reused on return.
class Staging {
 public:
  static constexpr size_t kMaxCopy = size_t{8} << 20;  // larger: the driver's path
  static constexpr size_t kMaxBuffers = 16;

  explicit Staging(int32_t device) : device_(device) {}
  // Copies src into a free buffer and queues its copy to dst on `stream`.
  void copy(void* dst, const void* src, size_t nbytes, cudaStream_t stream) {
    std::lock_guard<std::mutex> lock(mutex_);
    Buffer& b = acquire(nbytes);
    std::memcpy(b.host, src, nbytes);
    check(cudaMemcpyAsync(dst, b.host, nbytes, cudaMemcpyHostToDevice, stream), "copy",
          "cudaMemcpyAsync");
    check(cudaEventRecord(b.done, stream), "copy", "cudaEventRecord");
    b.queued = true;
  }

 private:
  struct Buffer {
    void* host = nullptr;
    size_t bytes = 0;
    cudaEvent_t done = nullptr;
    bool queued = false;
  };
  bool free_now(Buffer& b) {
    if (!b.queued) return true;
    const cudaError_t e = cudaEventQuery(b.done);
    if (e == cudaErrorNotReady) {
      cudaGetLastError();
      return false;
    }
    check(e, "copy", "cudaEventQuery");
    b.queued = false;
    return true;
  }
  Buffer& acquire(size_t nbytes) {
    for (Buffer& b : buffers_)
      if (b.bytes >= nbytes && free_now(b)) return b;
    if (buffers_.size() >= kMaxBuffers) {
      // Every buffer is in flight: wait for the oldest that is large enough
      // (the host has run far ahead of the copies).
      for (Buffer& b : buffers_)
        if (b.bytes >= nbytes) {
          check(cudaEventSynchronize(b.done), "copy", "cudaEventSynchronize");
          b.queued = false;
          return b;
        }
      Buffer& small = buffers_.front();
      check(cudaEventSynchronize(small.done), "copy", "cudaEventSynchronize");
      release_failed(cudaFreeHost(small.host), "cudaFreeHost");
      release_failed(cudaEventDestroy(small.done), "cudaEventDestroy");
      buffers_.erase(buffers_.begin());
    }
    Buffer b;
    b.bytes = std::max<size_t>(nbytes, size_t{64} << 10);
    check(cudaHostAlloc(&b.host, b.bytes, cudaHostAllocPortable), "copy", "cudaHostAlloc");
    const cudaError_t e = cudaEventCreateWithFlags(&b.done, cudaEventDisableTiming);
    if (e != cudaSuccess) {
      cudaFreeHost(b.host);
      check(e, "copy", "cudaEventCreate");
    }
    buffers_.push_back(b);
    return buffers_.back();
  }

  int32_t device_;
  std::mutex mutex_;
  std::vector<Buffer> buffers_;  // never freed: they live as long as the process
};

struct DeviceMemory {
  explicit DeviceMemory(int32_t index)
      : raw(index), cache(Device{CH_DEVICE_CUDA, index}, raw), staging(index) {}
  CudaRaw raw;
  CachingAllocator cache;
  Staging staging;
};

std::vector<std::unique_ptr<DeviceMemory>>& memories() {
  // Never destroyed: arrays may be released during static teardown.
  static auto* m = [] {
    auto* v = new std::vector<std::unique_ptr<DeviceMemory>>;
    for (int32_t i = 0, n = device_count(); i < n; ++i)
      v->push_back(std::make_unique<DeviceMemory>(i));
    return v;
  }();
  return *m;
}

DeviceMemory& memory_of(int32_t index, const char* who) {
  require_device(index, who);
  return *memories()[static_cast<size_t>(index)];
}

cudaStream_t as_stream(StreamHandle s) { return static_cast<cudaStream_t>(s); }

// Page-locked host memory from allocate_pinned (its start -> its size).
struct PinnedRegistry {
  std::mutex mutex;
  std::map<const char*, size_t> blocks;
  bool contains(const void* p, size_t n) {
    std::lock_guard<std::mutex> lock(mutex);
    const char* c = static_cast<const char*>(p);
    auto it = blocks.upper_bound(c);
    if (it == blocks.begin()) return false;
    --it;
    return c + n <= it->first + it->second;
  }
};
PinnedRegistry& pinned() {
  static auto* r = new PinnedRegistry;  // never destroyed
  return *r;
}

class CudaBackend final : public DeviceBackend {
 public:
  int32_t device_count() override { return cuda::device_count(); }
  std::string unavailable_reason() override { return cuda::unavailable_reason(); }
  void require_device(int32_t index, const char* who) override { cuda::require_device(index, who); }

  void* allocate(int32_t index, size_t nbytes, StreamHandle stream) override {
    // The allocator's key for the engine stream is null (memory.h).
    return device_allocator(index, "allocate").allocate(nbytes, stream);
  }
  void deallocate(int32_t index, void* ptr) noexcept override {
    auto& m = memories();
    if (index >= 0 && static_cast<size_t>(index) < m.size()) m[index]->cache.deallocate(ptr);
  }
  void* allocate_pinned(size_t nbytes) override {
    if (cuda::device_count() == 0)
      fail(CH_ERR_DEVICE, "page-locked host memory: no CUDA device: ", cuda::unavailable_reason());
    void* p = nullptr;
    check(cudaHostAlloc(&p, nbytes ? nbytes : 1, cudaHostAllocPortable), "page-locked host memory",
          "cudaHostAlloc");
    std::lock_guard<std::mutex> lock(pinned().mutex);
    pinned().blocks[static_cast<const char*>(p)] = nbytes ? nbytes : 1;
    return p;
  }
  void deallocate_pinned(void* ptr) noexcept override {
    {
      std::lock_guard<std::mutex> lock(pinned().mutex);
      pinned().blocks.erase(static_cast<const char*>(ptr));
    }
    release_failed(cudaFreeHost(ptr), "cudaFreeHost");
  }

  void copy(void* dst, Device dst_device, const void* src, Device src_device, size_t nbytes,
            StreamHandle stream) override {
    if (nbytes == 0) return;
    const int32_t on = dst_device.is_cpu() ? src_device.index : dst_device.index;
    DeviceGuard guard(on);
    const cudaStream_t engine = cuda::engine_stream(on);
    const bool peer =
        !dst_device.is_cpu() && !src_device.is_cpu() && dst_device.index != src_device.index;
    if (stream) {
      // A stream of the host's: after the engine's earlier work, before its
      // later work (as the legacy default stream ordered them).
      const cudaStream_t s = as_stream(stream);
      if (dst_device.is_cpu() || src_device.is_cpu())
        refuse_in_capture(on, "copy", "a copy between the host and the device");
      order_after(s, engine, on, "copy");
      if (peer) order_after(s, cuda::engine_stream(src_device.index), src_device.index, "copy");
      const cudaError_t e =
          peer ? cudaMemcpyPeerAsync(dst, dst_device.index, src, src_device.index, nbytes, s)
               : cudaMemcpyAsync(dst, src, nbytes, cudaMemcpyDefault, s);
      check(e, "copy", peer ? "cudaMemcpyPeerAsync" : "cudaMemcpyAsync");
      order_after(engine, s, on, "copy");
      if (peer) order_after(cuda::engine_stream(src_device.index), s, on, "copy");
      return;
    }
    if (peer) {
      // On the destination's engine stream, after the source device's work;
      // the source's later work waits for the copy (it may overwrite the
      // source). No host synchronisation.
      const cudaStream_t src_engine = cuda::engine_stream(src_device.index);
      order_after(engine, src_engine, src_device.index, "copy");
      check(cudaMemcpyPeerAsync(dst, dst_device.index, src, src_device.index, nbytes, engine),
            "copy", "cudaMemcpyPeerAsync");
      order_after(src_engine, engine, on, "copy");
      return;
    }
    if (!dst_device.is_cpu() && !src_device.is_cpu()) {
      check(cudaMemcpyAsync(dst, src, nbytes, cudaMemcpyDeviceToDevice, engine), "copy",
            "cudaMemcpyAsync");
      return;
    }
    if (dst_device.is_cpu()) {
      refuse_in_capture(on, "copy", "a copy to the host (a host synchronisation)");
      // Into pageable memory the call returns once the copy is done (the
      // runtime's documented behaviour); into page-locked memory it is
      // queued, and waited for here.
      check(cudaMemcpyAsync(dst, src, nbytes, cudaMemcpyDeviceToHost, engine), "copy",
            "cudaMemcpyAsync");
      if (pinned().contains(dst, nbytes))
        check(cudaStreamSynchronize(engine), "copy", "cudaStreamSynchronize");
      // The copy has waited for the device: the checks launched before it
      // are read now (cuda/runtime/deferred_errors.h).
      report_deferred_checks(on);
      return;
    }
    // From the host into an array the engine may still use: on the engine
    // stream, through the staging buffers (no host synchronisation).
    upload_on(dst, on, src, nbytes, engine);
  }

  StreamHandle upload_stream(int32_t index) override { return copy_stream(index); }

  // A fresh array (allocated on the copy stream): its copy does not wait for
  // the engine's queued work (the previous step), which waits for it only
  // where it reads the array; the block knows the engine used it.
  void upload(void* dst, int32_t index, const void* src, size_t nbytes) override {
    if (nbytes == 0) return;
    DeviceGuard guard(index);
    const cudaStream_t cs = copy_stream(index), engine = cuda::engine_stream(index);
    upload_on(dst, index, src, nbytes, cs);
    order_after(engine, cs, index, "copy");
    device_allocator(index, "copy").record_stream(dst, nullptr);  // null: the engine stream
  }
  void fill(int32_t index, void* ptr, DType dtype, int64_t n, double value) override {
    DeviceGuard guard(index);
    check(launch_fill(ptr, static_cast<int32_t>(dtype), n, value, nullptr), "fill", "fill kernel");
  }

  void fill_random(int32_t index, void* ptr, DType dtype, int64_t n, bool normal, double a,
                   double b) override;

  ch_memory_stats memory_stats(int32_t index) override {
    return device_allocator(index, "memory statistics").stats();
  }
  void empty_cache(int32_t index) override { device_allocator(index, "empty cache").empty_cache(); }
  void set_memory_limit(int32_t index, size_t bytes) override {
    device_allocator(index, "memory limit").set_limit(bytes);
  }
  size_t memory_limit(int32_t index) override {
    return device_allocator(index, "memory limit").limit();
  }

  int32_t current_device() override {
    if (cuda::device_count() == 0) return 0;
    int d = 0;
    check(cudaGetDevice(&d), "current device", "cudaGetDevice");
    return d;
  }
  void set_current_device(int32_t index) override {
    cuda::require_device(index, "set device");
    check(cudaSetDevice(index), "set device", "cudaSetDevice");
  }
  void synchronize(int32_t index) override {
    cuda::require_device(index, "synchronize");
    refuse_in_capture(index, "synchronize", "a host synchronisation");
    DeviceGuard guard(index);
    check(cudaDeviceSynchronize(), "synchronize", "cudaDeviceSynchronize");
    report_deferred_checks(index);
  }
  StreamHandle stream_create(int32_t index) override {
    cuda::require_device(index, "stream");
    DeviceGuard guard(index);
    cudaStream_t s = nullptr;
    // Non-blocking, as the engine's: copy() orders its work with the
    // engine's through events.
    check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "stream",
          "cudaStreamCreateWithFlags");
    return s;
  }
  void stream_synchronize(int32_t index, StreamHandle stream) override {
    refuse_in_capture(index, "stream synchronize", "a host synchronisation");
    DeviceGuard guard(index);
    check(cudaStreamSynchronize(as_stream(stream)), "stream synchronize", "cudaStreamSynchronize");
  }
  void stream_destroy(int32_t index, StreamHandle stream) noexcept override {
    int previous = 0;
    bool switched = cudaGetDevice(&previous) == cudaSuccess && previous != index &&
                    cudaSetDevice(index) == cudaSuccess;
    release_failed(cudaStreamSynchronize(as_stream(stream)), "cudaStreamSynchronize");
    release_failed(cudaStreamDestroy(as_stream(stream)), "cudaStreamDestroy");
    if (switched) cudaSetDevice(previous);
  }
  void seed(int32_t index, uint64_t s) override {
    cuda::require_device(index, "seed");
    seed_generator(index, s);
  }
  // On the device, through the add_into kernel (cuda/ops/math/reduction.cu).
  void accumulate(Array& acc, const Array& x) override { kernels::add_into(acc, x); }

  StreamHandle engine_stream(int32_t index) override { return cuda::engine_stream(index); }
  void begin_capture(int32_t index) override { cuda::begin_capture(index); }
  std::shared_ptr<DeviceGraph> end_capture(int32_t index) override {
    return cuda::end_capture(index);
  }
  bool capturing(int32_t index) override { return cuda::capturing(index); }

 private:
  // Host to device on `stream`: small copies through the staging buffers;
  // large ones through the driver (which stages pageable memory itself and
  // returns once it has; a page-locked source is waited for, so that it may
  // be reused on return as with pageable memory).
  void upload_on(void* dst, int32_t index, const void* src, size_t nbytes, cudaStream_t stream) {
    refuse_in_capture(index, "copy", "a copy from the host (replays would not copy again)");
    if (nbytes <= Staging::kMaxCopy) {
      memory_of(index, "copy").staging.copy(dst, src, nbytes, stream);
      return;
    }
    check(cudaMemcpyAsync(dst, src, nbytes, cudaMemcpyHostToDevice, stream), "copy",
          "cudaMemcpyAsync");
    if (pinned().contains(src, nbytes))
      check(cudaStreamSynchronize(stream), "copy", "cudaStreamSynchronize");
  }
};

void check_curand(curandStatus_t st, const char* who, const char* call) {
  if (st != CURAND_STATUS_SUCCESS)
    fail(st == CURAND_STATUS_ALLOCATION_FAILED ? CH_ERR_OUT_OF_MEMORY : CH_ERR_DEVICE, who, ": ",
         call, " failed with curandStatus ", static_cast<int>(st));
}

void CudaBackend::fill_random(int32_t index, void* ptr, DType dtype, int64_t n, bool normal,
                              double a, double b) {
  const char* who = normal ? "random normal" : "random uniform";
  if (dtype != DType::Float32 && dtype != DType::Float64)
    fail(CH_ERR_DTYPE, who, ": dtype ", dtype_name(dtype),
         " is not supported (float32 or float64 expected)");
  if (n <= 0) return;
  DeviceGuard guard(index);
  std::unique_lock<std::mutex> lock;
  curandGenerator_t g = curand_generator(index, lock);
  const bool f32 = dtype == DType::Float32;
  if (!normal) {
    check_curand(
        f32 ? curandGenerateUniform(g, static_cast<float*>(ptr), static_cast<size_t>(n))
            : curandGenerateUniformDouble(g, static_cast<double*>(ptr), static_cast<size_t>(n)),
        who, "curandGenerateUniform");
    check(launch_uniform_map(ptr, static_cast<int32_t>(dtype), n, a, b - a, nullptr), who,
          "uniform map kernel");
    return;
  }
  // cuRAND's normal generators produce pairs: an odd count goes through a
  // scratch block one element longer.
  size_t w = dtype_size(dtype);
  size_t even = static_cast<size_t>(n + (n & 1));
  CachingAllocator& mem = device_allocator(index, who);
  void* out = ptr;
  if (n & 1) out = mem.allocate(even * w);
  curandStatus_t st = f32 ? curandGenerateNormal(g, static_cast<float*>(out), even,
                                                 static_cast<float>(a), static_cast<float>(b))
                          : curandGenerateNormalDouble(g, static_cast<double*>(out), even, a, b);
  cudaError_t e = cudaSuccess;
  if (out != ptr) {
    if (st == CURAND_STATUS_SUCCESS)
      e = cudaMemcpyAsync(ptr, out, static_cast<size_t>(n) * w, cudaMemcpyDeviceToDevice,
                          cuda::engine_stream(index));
    mem.deallocate(out);  // reused only on the engine stream, after the copy
  }
  check_curand(st, who, "curandGenerateNormal");
  check(e, who, "cudaMemcpyAsync");
}

}  // namespace

CachingAllocator& device_allocator(int32_t index, const char* who) {
  cuda::require_device(index, who);
  return memories()[static_cast<size_t>(index)]->cache;
}

DeviceBackend& backend() {
  static CudaBackend* b = new CudaBackend;  // never destroyed
  return *b;
}

}  // namespace chainerc::cuda
