// CUDA kernel of dropout: the mask of kernels/pointwise/noise.h (a counter-
// based hash of (seed, index), the CPU backend's very math, so the CPU and
// the GPU draw the same mask for a seed) and the product, in one pass.
#include "cuda/ops/elementwise.cuh"
#include "cuda/ops/kernel_list.h"
#include "kernels/noise.h"
#include "kernels/pointwise/noise.h"

namespace chainerc::cuda {
namespace {

template <typename T>
__global__ void dropout_forward_kernel(const T* __restrict__ x, pointwise::DropoutMask draw,
                                       T scale, T* __restrict__ mask, T* __restrict__ y,
                                       int64_t n) {
  for (int64_t i = grid_start(); i < n; i += grid_step()) {
    const T m = draw(i, scale);
    mask[i] = m;
    y[i] = x[i] * m;
  }
}

void dropout_kernel(const Array& x, uint64_t seed, double ratio, Array& mask, Array& y) {
  DeviceGuard guard(x.device().index);
  const pointwise::DropoutMask draw{seed, pointwise::dropout_threshold(ratio)};
  dispatch_floating(x.dtype(), "dropout", [&](auto t) {
    using T = decltype(t);
    const T scale = static_cast<T>(1.0 / (1.0 - ratio));
    launch_elementwise("dropout", x.size(), dropout_forward_kernel<T>, x.data<T>(), draw, scale,
                       mask.data<T>(), y.data<T>(), x.size());
  });
}

}  // namespace

void register_dropout_kernels() { kernels::dropout.set(CH_DEVICE_CUDA, dropout_kernel); }

}  // namespace chainerc::cuda
