// cuDNN 9 in the CUDA backend (legacy API), shared by cuda/cudnn/*.cpp:
// the per-device handle, status checks, RAII descriptors and workspaces.
//
// cuda/cudnn/ wraps chainerc's own CUDA kernels: register_cudnn_kernels()
// runs after every cuda/ops/ registration, keeps each kernel's previous
// (own) implementation and calls it when ch_config_use_cudnn() is off, when
// libcudnn.so.9 cannot be loaded (handle() returns null), or for a case cuDNN
// does not cover (e.g. cover_all pooling that grows the output, sizes beyond
// int, empty arrays). So the contracts of src/kernels/*.h hold whichever runs.
#pragma once

#include <cudnn.h>

#include <cstdint>
#include <mutex>

#include "core/array.h"
#include "kernels/registry.h"

namespace chainerc::cuda::cudnn {

// Registers the cuDNN implementations over the own ones (kernel_list.cpp,
// last).
void register_cudnn_kernels();
// Per file.
void register_convolution_kernels();
void register_pooling_kernels();
void register_softmax_kernels();
void register_activation_kernels();
void register_normalization_kernels();

// Device `device`'s cuDNN handle on the default stream, with `lock` (which
// this locks) held for as long as it is used; null (and `lock` not taken)
// when cuDNN is not to be used: ch_config_use_cudnn() is 0, or
// libcudnn.so.9 (version 9 or later) could not be loaded or could not make
// a handle on this device (tried once per device). The handle is created
// lazily and lives as long as the process. `kernel` (chainerc's kernel name,
// or null for a handle taken only to ask cuDNN about algorithms) is counted
// in ch_config_cudnn_calls when the handle is returned; under
// CH_REQUIRE_CUDNN=1 a missing cuDNN throws, naming it.
cudnnHandle_t handle(int32_t device, std::unique_lock<std::mutex>& lock, const char* kernel);

// Throws Error naming `call` unless `st` is CUDNN_STATUS_SUCCESS
// (CH_ERR_OUT_OF_MEMORY for CUDNN_STATUS_ALLOC_FAILED, else CH_ERR_DEVICE).
void check(cudnnStatus_t st, const char* call);

// CUDNN_DATA_FLOAT or CUDNN_DATA_DOUBLE.
cudnnDataType_t data_type(DType dtype);
// Whether every value fits in cuDNN's int arguments, and the elements of the
// product in an int too (the legacy API's strides are ints).
bool fits_int(std::initializer_list<int64_t> dims);

// 1 and 0 in the dtype's scalar type (cuDNN reads alpha/beta as float for
// float32 data and as double for float64).
struct Scalars {
  explicit Scalars(DType dtype) : dtype_(dtype) {}
  const void* one() const {
    return dtype_ == DType::Float64 ? static_cast<const void*>(&d1_) : &f1_;
  }
  const void* zero() const {
    return dtype_ == DType::Float64 ? static_cast<const void*>(&d0_) : &f0_;
  }

 private:
  DType dtype_;
  float f1_ = 1.f, f0_ = 0.f;
  double d1_ = 1.0, d0_ = 0.0;
};

// An NCHW tensor descriptor (packed).
class TensorDesc {
 public:
  TensorDesc(DType dtype, int64_t n, int64_t c, int64_t h, int64_t w);
  ~TensorDesc();
  TensorDesc(const TensorDesc&) = delete;
  TensorDesc& operator=(const TensorDesc&) = delete;
  operator cudnnTensorDescriptor_t() const { return d_; }

 private:
  cudnnTensorDescriptor_t d_ = nullptr;
};

// A KCRS (out, in, kh, kw) filter descriptor.
class FilterDesc {
 public:
  FilterDesc(DType dtype, int64_t k, int64_t c, int64_t h, int64_t w);
  ~FilterDesc();
  FilterDesc(const FilterDesc&) = delete;
  FilterDesc& operator=(const FilterDesc&) = delete;
  operator cudnnFilterDescriptor_t() const { return d_; }

 private:
  cudnnFilterDescriptor_t d_ = nullptr;
};

// Scratch memory from the device's caching allocator, returned on scope exit
// (the allocator reuses a block on the same stream only after the work queued
// before its release: the default stream, as every cuDNN call here). Taken
// without the handle's lock held: on a failed allocation the allocator runs
// the out-of-memory hook (ch_memory_set_oom_hook), user code that may wait
// for another thread that needs the same handle; the caller releases the
// lock, takes the workspace, then takes the handle again (null: fall back).
class Workspace {
 public:
  Workspace(int32_t device, size_t bytes);
  ~Workspace();
  Workspace(const Workspace&) = delete;
  Workspace& operator=(const Workspace&) = delete;
  void* get() const { return ptr_; }
  size_t size() const { return bytes_; }

 private:
  int32_t device_;
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

// The implementation registered before cuDNN's for `kernel` (chainerc's own
// CUDA kernel), kept by the register functions.
template <typename Sig>
struct Own {
  typename kernels::Kernel<Sig>::Fn fn = nullptr;
  const char* name = "";
  void keep(const kernels::Kernel<Sig>& k) {
    fn = k.get(CH_DEVICE_CUDA);
    name = k.name();
  }
  // Runs it, or refuses the device as a missing kernel would.
  template <typename... A>
  void operator()(Device device, A&&... args) const {
    if (!fn) kernels::detail::no_kernel(name, device);
    fn(std::forward<A>(args)...);
  }
};

}  // namespace chainerc::cuda::cudnn
