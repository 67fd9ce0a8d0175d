// Softmax over axis 1 through cuDNN 9: an (N, C, ...) array as the NCHW
// tensor (N, C, prod(...), 1) with CUDNN_SOFTMAX_MODE_CHANNEL (each position
// of the trailing axes on its own) and CUDNN_SOFTMAX_ACCURATE (the maximum
// subtracted first, as the own kernel). The backward is cuDNN's
// gx = y (gy - sum(gy y, axis 1)), kernels/activation.h's softmax_grad.
// Empty and int-overflowing shapes run the own kernels.
#include "cuda/runtime/cuda_util.h"
#include "cudnn_util.h"
#include "kernels/activation.h"

namespace chainerc::cuda::cudnn {
namespace {

Own<void(const Array&, Array&)> g_own_forward;
Own<void(const Array&, const Array&, Array&)> g_own_backward;

// (N, C, inner) of an array normalised over axis 1 (ndim >= 2, by the op).
struct Layout {
  int64_t n, c, inner;
};
Layout layout_of(const Array& a) {
  Layout l{a.shape()[0], a.shape()[1], 1};
  for (int32_t d = 2; d < a.ndim(); ++d) l.inner *= a.shape()[d];
  return l;
}

void softmax_forward(const Array& x, Array& y) {
  const Device dev = x.device();
  const Layout l = layout_of(x);
  std::unique_lock<std::mutex> lock;
  cudnnHandle_t h =
      fits_int({l.n, l.c, l.inner}) ? handle(dev.index, lock, "softmax_forward") : nullptr;
  if (!h) return g_own_forward(dev, x, y);
  DeviceGuard guard(dev.index);
  const TensorDesc d(x.dtype(), l.n, l.c, l.inner, 1);
  const Scalars s(x.dtype());
  check(cudnnSoftmaxForward(h, CUDNN_SOFTMAX_ACCURATE, CUDNN_SOFTMAX_MODE_CHANNEL, s.one(), d,
                            x.raw(), s.zero(), d, y.raw()),
        "cudnnSoftmaxForward");
}

void softmax_backward(const Array& y, const Array& gy, Array& gx) {
  const Device dev = y.device();
  const Layout l = layout_of(y);
  std::unique_lock<std::mutex> lock;
  cudnnHandle_t h =
      fits_int({l.n, l.c, l.inner}) ? handle(dev.index, lock, "softmax_backward") : nullptr;
  if (!h) return g_own_backward(dev, y, gy, gx);
  DeviceGuard guard(dev.index);
  const TensorDesc d(y.dtype(), l.n, l.c, l.inner, 1);
  const Scalars s(y.dtype());
  check(cudnnSoftmaxBackward(h, CUDNN_SOFTMAX_ACCURATE, CUDNN_SOFTMAX_MODE_CHANNEL, s.one(), d,
                             y.raw(), d, gy.raw(), s.zero(), d, gx.raw()),
        "cudnnSoftmaxBackward");
}

}  // namespace

void register_softmax_kernels() {
  g_own_forward.keep(kernels::softmax);
  g_own_backward.keep(kernels::softmax_grad);
  kernels::softmax.set(CH_DEVICE_CUDA, softmax_forward);
  kernels::softmax_grad.set(CH_DEVICE_CUDA, softmax_backward);
}

}  // namespace chainerc::cuda::cudnn
