// cuDNN handles (one per device, on the default stream), status checks,
// descriptors and workspaces for cuda/cudnn/; register_cudnn_kernels().
#include <limits>
#include <memory>
#include <vector>

#include "core/config.h"
#include "cuda/runtime/cuda_util.h"
#include "cuda/runtime/memory.h"
#include "cudnn_util.h"

namespace chainerc::cuda::cudnn {
namespace {

struct DeviceCudnn {
  std::mutex mutex;  // held while the handle is in use
  bool tried = false;
  cudnnHandle_t handle = nullptr;
};

std::vector<std::unique_ptr<DeviceCudnn>>& per_device() {
  static auto* v = [] {  // never destroyed: handles live as long as the process
    auto* r = new std::vector<std::unique_ptr<DeviceCudnn>>;
    for (int32_t i = 0, n = device_count(); i < n; ++i)
      r->push_back(std::make_unique<DeviceCudnn>());
    return r;
  }();
  return *v;
}

}  // namespace

cudnnHandle_t handle(int32_t device, std::unique_lock<std::mutex>& lock) {
  if (!config::use_cudnn()) return nullptr;
  require_device(device, "cuDNN");
  DeviceCudnn& d = *per_device()[static_cast<size_t>(device)];
  std::unique_lock<std::mutex> l(d.mutex);
  if (!d.tried) {
    d.tried = true;
    // cudnnGetVersion is 0 when libcudnn.so.9 cannot be loaded
    // (cuda/runtime/lazy_libraries.cpp): the own kernels run then.
    if (cudnnGetVersion() >= 90000) {
      DeviceGuard guard(device);
      cudnnHandle_t h = nullptr;
      if (cudnnCreate(&h) == CUDNN_STATUS_SUCCESS) {
        if (cudnnSetStream(h, nullptr) == CUDNN_STATUS_SUCCESS)
          d.handle = h;
        else
          cudnnDestroy(h);
      }
      cudaGetLastError();  // a failed attempt leaves no error for the next launch
    }
  }
  if (!d.handle) return nullptr;
  lock = std::move(l);
  return d.handle;
}

void check(cudnnStatus_t st, const char* call) {
  if (st == CUDNN_STATUS_SUCCESS) return;
  fail(st == CUDNN_STATUS_ALLOC_FAILED ? CH_ERR_OUT_OF_MEMORY : CH_ERR_DEVICE, "cuDNN: ", call,
       " failed: ", cudnnGetErrorString(st), " (cudnnStatus ", static_cast<int>(st), ")");
}

cudnnDataType_t data_type(DType dtype) {
  if (dtype == DType::Float32) return CUDNN_DATA_FLOAT;
  if (dtype == DType::Float64) return CUDNN_DATA_DOUBLE;
  fail(CH_ERR_DTYPE, "cuDNN: dtype ", dtype_name(dtype), " (float32 or float64 expected)");
}

bool fits_int(std::initializer_list<int64_t> dims) {
  constexpr int64_t kMax = std::numeric_limits<int>::max();
  int64_t product = 1;
  for (int64_t d : dims) {
    if (d <= 0 || d > kMax) return false;
    if (product > kMax / d) return false;
    product *= d;
  }
  return true;
}

TensorDesc::TensorDesc(DType dtype, int64_t n, int64_t c, int64_t h, int64_t w) {
  check(cudnnCreateTensorDescriptor(&d_), "cudnnCreateTensorDescriptor");
  const cudnnStatus_t st =
      cudnnSetTensor4dDescriptor(d_, CUDNN_TENSOR_NCHW, data_type(dtype), static_cast<int>(n),
                                 static_cast<int>(c), static_cast<int>(h), static_cast<int>(w));
  if (st != CUDNN_STATUS_SUCCESS) {
    cudnnDestroyTensorDescriptor(d_);
    check(st, "cudnnSetTensor4dDescriptor");
  }
}
TensorDesc::~TensorDesc() { cudnnDestroyTensorDescriptor(d_); }

FilterDesc::FilterDesc(DType dtype, int64_t k, int64_t c, int64_t h, int64_t w) {
  check(cudnnCreateFilterDescriptor(&d_), "cudnnCreateFilterDescriptor");
  const cudnnStatus_t st =
      cudnnSetFilter4dDescriptor(d_, data_type(dtype), CUDNN_TENSOR_NCHW, static_cast<int>(k),
                                 static_cast<int>(c), static_cast<int>(h), static_cast<int>(w));
  if (st != CUDNN_STATUS_SUCCESS) {
    cudnnDestroyFilterDescriptor(d_);
    check(st, "cudnnSetFilter4dDescriptor");
  }
}
FilterDesc::~FilterDesc() { cudnnDestroyFilterDescriptor(d_); }

Workspace::Workspace(int32_t device, size_t bytes) : device_(device), bytes_(bytes) {
  if (bytes) ptr_ = device_allocator(device, "cuDNN workspace").allocate(bytes);
}
Workspace::~Workspace() {
  if (ptr_) device_allocator(device_, "cuDNN workspace").deallocate(ptr_);
}

void register_cudnn_kernels() {
  register_convolution_kernels();
  register_pooling_kernels();
  register_softmax_kernels();
  register_activation_kernels();
  register_normalization_kernels();
}

}  // namespace chainerc::cuda::cudnn
