// relu, sigmoid and tanh through cuDNN 9 (cudnnActivationForward), and
// relu's gradient (cudnnActivationBackward). relu does not propagate NaN
// (CUDNN_NOT_PROPAGATE_NAN), as the own kernel: x > 0 ? x : 0 is 0 for NaN. The array is
// the NCHW tensor (1, 1, 1, size); sizes beyond int and empty arrays run the
// own kernels.
//
// relu_grad is given y, not x: y stands for x there, which gives relu's
// gradient exactly whichever cuDNN reads (y > 0 exactly where x > 0, and
// relu(y) = y). sigmoid_grad and tanh_grad keep the own kernels: for them y
// cannot stand for x, and cuDNN's documentation does not say that x is left
// unread.
#include "kernels/activation.h"

#include "cuda/runtime/cuda_util.h"
#include "cudnn_util.h"

namespace chainerc::cuda::cudnn {
namespace {

Own<void(const Array&, Array&)> g_own_relu, g_own_sigmoid, g_own_tanh;
Own<void(const Array&, const Array&, Array&)> g_own_relu_grad;

class ActivationDesc {
 public:
  explicit ActivationDesc(cudnnActivationMode_t mode) {
    check(cudnnCreateActivationDescriptor(&d_), "cudnnCreateActivationDescriptor");
    const cudnnStatus_t st = cudnnSetActivationDescriptor(d_, mode, CUDNN_NOT_PROPAGATE_NAN, 0.0);
    if (st != CUDNN_STATUS_SUCCESS) {
      cudnnDestroyActivationDescriptor(d_);
      check(st, "cudnnSetActivationDescriptor");
    }
  }
  ~ActivationDesc() { cudnnDestroyActivationDescriptor(d_); }
  ActivationDesc(const ActivationDesc&) = delete;
  ActivationDesc& operator=(const ActivationDesc&) = delete;
  operator cudnnActivationDescriptor_t() const { return d_; }

 private:
  cudnnActivationDescriptor_t d_ = nullptr;
};

constexpr const char* mode_name(cudnnActivationMode_t m) {
  return m == CUDNN_ACTIVATION_RELU ? "relu" : m == CUDNN_ACTIVATION_SIGMOID ? "sigmoid" : "tanh";
}

template <cudnnActivationMode_t Mode, Own<void(const Array&, Array&)>& OwnFn>
void forward(const Array& x, Array& y) {
  const Device dev = x.device();
  std::unique_lock<std::mutex> lock;
  cudnnHandle_t h = fits_int({x.size()}) ? handle(dev.index, lock, mode_name(Mode)) : nullptr;
  if (!h) return OwnFn(dev, x, y);
  DeviceGuard guard(dev.index);
  const TensorDesc d(x.dtype(), 1, 1, 1, x.size());
  const ActivationDesc ad(Mode);
  const Scalars s(x.dtype());
  check(cudnnActivationForward(h, ad, s.one(), d, x.raw(), s.zero(), d, y.raw()),
        "cudnnActivationForward");
}

void relu_grad(const Array& gy, const Array& y, Array& gx) {
  const Device dev = gy.device();
  std::unique_lock<std::mutex> lock;
  cudnnHandle_t h = fits_int({gy.size()}) ? handle(dev.index, lock, "relu_grad") : nullptr;
  if (!h) return g_own_relu_grad(dev, gy, y, gx);
  DeviceGuard guard(dev.index);
  const TensorDesc d(gy.dtype(), 1, 1, 1, gy.size());
  const ActivationDesc ad(CUDNN_ACTIVATION_RELU);
  const Scalars s(gy.dtype());
  check(cudnnActivationBackward(h, ad, s.one(), d, y.raw(), d, gy.raw(), d, y.raw(), s.zero(), d,
                                gx.raw()),
        "cudnnActivationBackward");
}

}  // namespace

void register_activation_kernels() {
  g_own_relu.keep(kernels::relu);
  g_own_sigmoid.keep(kernels::sigmoid);
  g_own_tanh.keep(kernels::tanh);
  g_own_relu_grad.keep(kernels::relu_grad);
  kernels::relu.set(CH_DEVICE_CUDA, forward<CUDNN_ACTIVATION_RELU, g_own_relu>);
  kernels::sigmoid.set(CH_DEVICE_CUDA, forward<CUDNN_ACTIVATION_SIGMOID, g_own_sigmoid>);
  kernels::tanh.set(CH_DEVICE_CUDA, forward<CUDNN_ACTIVATION_TANH, g_own_tanh>);
  kernels::relu_grad.set(CH_DEVICE_CUDA, relu_grad);
}

}  // namespace chainerc::cuda::cudnn
