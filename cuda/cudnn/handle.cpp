// cuDNN handles (one per device, on the default stream), status checks,
// descriptors and workspaces for cuda/cudnn/; register_cudnn_kernels().
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "core/config.h"
#include "cuda/runtime/cuda_util.h"
#include "cuda/runtime/lazy_libraries.h"
#include "cuda/runtime/memory.h"
#include "cuda/runtime/streams.h"
#include "cudnn_util.h"

namespace chainerc::cuda::cudnn {
namespace {

struct DeviceCudnn {
  std::mutex mutex;  // held while the handle is in use
  bool tried = false;
  cudnnHandle_t handle = nullptr;
  std::string error;  // why there is no handle (after tried)
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

// libcudnn's version when it is the build's major version, else 0 with `why`.
size_t loaded_version(std::string* why, int32_t* state) {
  // cudnnGetVersion is 0 when libcudnn.so.9 cannot be loaded
  // (cuda/runtime/lazy_libraries.cpp).
  const size_t v = cudnnGetVersion();
  if (v == 0) {
    *state = config::kCudnnNotFound;
    *why = load_error("cudnn");
    if (why->empty()) *why = "libcudnn did not report a version";
    return 0;
  }
  if (v / 10000 != CUDNN_MAJOR) {
    *state = config::kCudnnVersionMismatch;
    *why = "the loaded libcudnn is version " + std::to_string(v) + ", this build needs cuDNN " +
           std::to_string(CUDNN_MAJOR) + " (built against " + std::to_string(CUDNN_VERSION) + ")";
    return 0;
  }
  return v;
}

// Makes d's handle once (d.mutex held by the caller).
void make_handle(DeviceCudnn& d, int32_t device) {
  if (d.tried) return;
  d.tried = true;
  int32_t state = 0;
  if (loaded_version(&d.error, &state) == 0) return;
  DeviceGuard guard(device);
  cudnnHandle_t h = nullptr;
  const cudnnStatus_t st = cudnnCreate(&h);
  if (st == CUDNN_STATUS_SUCCESS) {
    const cudnnStatus_t ss = cudnnSetStream(h, engine_stream(device));
    if (ss == CUDNN_STATUS_SUCCESS)
      d.handle = h;
    else {
      d.error = std::string("cudnnSetStream failed: ") + cudnnGetErrorString(ss);
      cudnnDestroy(h);
    }
  } else {
    d.error =
        "cudnnCreate on cuda:" + std::to_string(device) + " failed: " + cudnnGetErrorString(st);
  }
  cudaGetLastError();  // a failed attempt leaves no error for the next launch
}

// config::cudnn_status() where cuDNN is built (set by register_cudnn_kernels).
config::CudnnStatus probe() {
  std::string why;
  int32_t state = 0;
  const size_t v = loaded_version(&why, &state);
  if (v == 0) return {state, static_cast<int32_t>(cudnnGetVersion()), why};
  if (device_count() == 0)
    return {config::kCudnnNoDevice, static_cast<int32_t>(v),
            "no CUDA device: " + unavailable_reason()};
  int current = 0;
  if (cudaGetDevice(&current) != cudaSuccess || current < 0 || current >= device_count()) {
    cudaGetLastError();
    current = 0;
  }
  DeviceCudnn& d = *per_device()[static_cast<size_t>(current)];
  std::lock_guard<std::mutex> l(d.mutex);
  make_handle(d, current);
  if (!d.handle) return {config::kCudnnInitFailed, static_cast<int32_t>(v), d.error};
  return {config::kCudnnInUse, static_cast<int32_t>(v), ""};
}

}  // namespace

cudnnHandle_t handle(int32_t device, std::unique_lock<std::mutex>& lock, const char* kernel) {
  if (!config::use_cudnn() || config::cudnn_disabled_by_env()) return nullptr;
  require_device(device, "cuDNN");
  DeviceCudnn& d = *per_device()[static_cast<size_t>(device)];
  std::unique_lock<std::mutex> l(d.mutex);
  make_handle(d, device);
  if (!d.handle) {
    l.unlock();
    config::check_cudnn_required(kernel ? kernel : "cuDNN");
    return nullptr;
  }
  if (kernel) config::count_cudnn_call(kernel);
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
  config::set_cudnn_probe(probe);
  register_convolution_kernels();
  register_pooling_kernels();
  register_softmax_kernels();
  register_activation_kernels();
  register_normalization_kernels();
}

}  // namespace chainerc::cuda::cudnn
