// The CPU as a DeviceBackend: copies, fills, random fills and gradient
// accumulation for arrays on cpu:0. Memory comes from the core's host
// caching allocator (Buffer::allocate), so allocate() is not used for it.
#include <cstring>

#include "backend/cpu/elementwise.h"
#include "core/allocator.h"
#include "core/array.h"
#include "core/device_backend.h"
#include "core/error.h"
#include "core/random.h"

namespace chainerc {
namespace {

template <typename T>
void fill_typed(void* p, int64_t n, double v) {
  T* d = static_cast<T*>(p);
  const T x = static_cast<T>(v);
  for (int64_t i = 0; i < n; ++i) d[i] = x;
}

class CpuBackend final : public DeviceBackend {
 public:
  int32_t device_count() override { return 1; }
  std::string unavailable_reason() override { return ""; }
  void require_device(int32_t index, const char* who) override {
    if (index != 0) fail(CH_ERR_DEVICE, who, ": cpu:", index, " does not exist (the CPU is cpu:0)");
  }
  // CPU buffers come from host_allocate (Buffer::allocate), which needs the
  // size back on release; this interface's allocate is for device memory.
  void* allocate(int32_t, size_t, StreamHandle) override {
    fail(CH_ERR_DEVICE, "allocate: CPU memory comes from the host allocator");
  }
  void deallocate(int32_t, void*) noexcept override {}
  void* allocate_pinned(size_t) override {
    fail(CH_ERR_DEVICE, "page-locked host memory: this build of chainerc has no CUDA backend");
  }
  void deallocate_pinned(void*) noexcept override {}

  void copy(void* dst, Device, const void* src, Device, size_t nbytes, StreamHandle) override {
    if (nbytes) std::memcpy(dst, src, nbytes);
  }
  void fill(int32_t, void* ptr, DType dtype, int64_t n, double value) override {
    switch (dtype) {
      case DType::Float32:
        fill_typed<float>(ptr, n, value);
        break;
      case DType::Float64:
        fill_typed<double>(ptr, n, value);
        break;
      case DType::Int32:
        fill_typed<int32_t>(ptr, n, value);
        break;
    }
  }
  void fill_random(int32_t, void* ptr, DType dtype, int64_t n, bool normal, double a,
                   double b) override {
    random::host_samples(ptr, dtype, n, normal, a, b);
  }

  ch_memory_stats memory_stats(int32_t) override { return host_memory_stats(); }
  void empty_cache(int32_t) override { host_empty_cache(); }
  void set_memory_limit(int32_t, size_t) override {
    fail(CH_ERR_DEVICE, "memory limit: the CPU's host allocator has no limit");
  }
  size_t memory_limit(int32_t) override { return 0; }

  int32_t current_device() override { return 0; }
  void set_current_device(int32_t index) override { require_device(index, "set device"); }
  void synchronize(int32_t) override {}
  StreamHandle stream_create(int32_t) override {
    fail(CH_ERR_DEVICE, "streams are on CUDA devices, not on cpu:0");
  }
  void stream_synchronize(int32_t, StreamHandle) override {}
  void stream_destroy(int32_t, StreamHandle) noexcept override {}
  void seed(int32_t, uint64_t s) override { random::seed(s); }

  void accumulate(Array& acc, const Array& x) override { cpu::add_into(acc, x); }
};

}  // namespace

DeviceBackend& cpu_backend() {
  static CpuBackend* backend = new CpuBackend;  // never destroyed: usable from static destructors
  return *backend;
}

}  // namespace chainerc
