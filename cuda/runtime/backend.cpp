// The CUDA implementation of the core's DeviceBackend.
#include <memory>
#include <mutex>
#include <vector>

#include "core/device_backend.h"
#include "cuda_util.h"
#include "deferred_errors.h"
#include "fill_kernels.h"
#include "kernels/math.h"
#include "libraries.h"
#include "memory.h"

namespace chainerc::cuda {
namespace {

class CudaRaw final : public RawAllocator {
 public:
  explicit CudaRaw(int32_t device) : device_(device) {}
  void* allocate(size_t nbytes) override {
    DeviceGuard guard(device_);
    void* p = nullptr;
    cudaError_t e = cudaMalloc(&p, nbytes);
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

 private:
  int32_t device_;
  std::mutex mutex_;
  std::string last_;
};

struct DeviceMemory {
  explicit DeviceMemory(int32_t index) : raw(index), cache(Device{CH_DEVICE_CUDA, index}, raw) {}
  CudaRaw raw;
  CachingAllocator cache;
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

cudaStream_t as_stream(StreamHandle s) { return static_cast<cudaStream_t>(s); }

// Work queued on `stream` after this waits for everything queued so far on
// device `device`'s default stream (an event recorded there).
void order_after_default_stream(int32_t device, cudaStream_t stream) {
  cudaEvent_t ev = nullptr;
  {
    DeviceGuard guard(device);
    check(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming), "copy", "cudaEventCreate");
    cudaError_t e = cudaEventRecord(ev, nullptr);
    if (e != cudaSuccess) {
      cudaEventDestroy(ev);
      check(e, "copy", "cudaEventRecord");
    }
  }
  cudaError_t e = cudaStreamWaitEvent(stream, ev, 0);
  release_failed(cudaEventDestroy(ev), "cudaEventDestroy");  // freed once the wait is done
  check(e, "copy", "cudaStreamWaitEvent");
}

class CudaBackend final : public DeviceBackend {
 public:
  int32_t device_count() override { return cuda::device_count(); }
  std::string unavailable_reason() override { return cuda::unavailable_reason(); }
  void require_device(int32_t index, const char* who) override { cuda::require_device(index, who); }

  void* allocate(int32_t index, size_t nbytes, StreamHandle stream) override {
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
    return p;
  }
  void deallocate_pinned(void* ptr) noexcept override {
    release_failed(cudaFreeHost(ptr), "cudaFreeHost");
  }

  void copy(void* dst, Device dst_device, const void* src, Device src_device, size_t nbytes,
            StreamHandle stream) override {
    if (nbytes == 0) return;
    int32_t on = dst_device.is_cpu() ? src_device.index : dst_device.index;
    DeviceGuard guard(on);
    cudaError_t e;
    if (!dst_device.is_cpu() && !src_device.is_cpu() && dst_device.index != src_device.index) {
      if (stream) {
        // cudaMemcpyPeerAsync is ordered on `stream` only: make it wait for
        // the work queued on the source device's default stream (cudaMemcpyPeer
        // is serialized with both devices' work by itself).
        order_after_default_stream(src_device.index, as_stream(stream));
        e = cudaMemcpyPeerAsync(dst, dst_device.index, src, src_device.index, nbytes,
                                as_stream(stream));
      } else {
        e = cudaMemcpyPeer(dst, dst_device.index, src, src_device.index, nbytes);
      }
    } else
      e = stream ? cudaMemcpyAsync(dst, src, nbytes, cudaMemcpyDefault, as_stream(stream))
                 : cudaMemcpy(dst, src, nbytes, cudaMemcpyDefault);
    check(e, "copy", stream ? "cudaMemcpyAsync" : "cudaMemcpy");
    // A copy to the host has waited for the device: the checks launched
    // before it are read now (cuda/runtime/deferred_errors.h).
    if (!stream && dst_device.is_cpu() && !src_device.is_cpu()) report_deferred_checks(on);
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
    DeviceGuard guard(index);
    check(cudaDeviceSynchronize(), "synchronize", "cudaDeviceSynchronize");
    report_deferred_checks(index);
  }
  StreamHandle stream_create(int32_t index) override {
    cuda::require_device(index, "stream");
    DeviceGuard guard(index);
    cudaStream_t s = nullptr;
    // A blocking stream: ordered with the legacy default stream on which the
    // engine runs, so memory freed on one and reused on the other is safe.
    check(cudaStreamCreateWithFlags(&s, cudaStreamDefault), "stream", "cudaStreamCreateWithFlags");
    return s;
  }
  void stream_synchronize(int32_t index, StreamHandle stream) override {
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
      e = cudaMemcpyAsync(ptr, out, static_cast<size_t>(n) * w, cudaMemcpyDeviceToDevice, nullptr);
    mem.deallocate(out);  // reused only on the default stream, after the copy
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
