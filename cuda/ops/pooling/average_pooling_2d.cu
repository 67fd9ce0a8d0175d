// CUDA kernels of average_pooling_2d on NCHW arrays. Forward: one thread per
// output element, the window's sum (inside the plane, padding counts as 0)
// times 1 / (kh * kw), as the CPU's. Backward: one thread per input element
// gathers gy / (kh * kw) of the outputs whose windows cover it, in output
// order (no atomics).
#include "cuda/ops/elementwise.cuh"
#include "cuda/ops/kernel_list.h"
#include "cuda/ops/pooling/pool_window.cuh"
#include "kernels/pooling.h"

namespace chainerc::cuda {
namespace {

using kernels::Pool2D;

template <typename T>
__global__ void average_pool_forward_kernel(Pool2D p, T scale, const T* __restrict__ x,
                                            T* __restrict__ y, int64_t n) {
  for (int64_t i = grid_start(); i < n; i += grid_step()) {
    const int64_t ox = i % p.ow, oy = (i / p.ow) % p.oh, plane = i / (p.ow * p.oh);
    const Window win = window_of(p, oy, ox);
    const T* xs = x + plane * p.h * p.w;
    T s = 0;
    for (int64_t iy = win.ya; iy < win.yb; ++iy)
      for (int64_t ix = win.xa; ix < win.xb; ++ix) s += xs[iy * p.w + ix];
    y[i] = s * scale;
  }
}

template <typename T>
__global__ void average_pool_backward_kernel(Pool2D p, T scale, const T* __restrict__ gy,
                                             T* __restrict__ gx, int64_t n) {
  for (int64_t i = grid_start(); i < n; i += grid_step()) {
    const int64_t ix = i % p.w, iy = (i / p.w) % p.h, plane = i / (p.w * p.h);
    const Covering cov = covering(p, iy, ix);
    const T* g = gy + plane * p.oh * p.ow;
    T acc = 0;
    for (int64_t oy = cov.oya; oy < cov.oyb; ++oy)
      for (int64_t ox = cov.oxa; ox < cov.oxb; ++ox) acc += g[oy * p.ow + ox] * scale;
    gx[i] += acc;
  }
}

void average_pool_2d_forward(const Array& x, const Pool2D& p, Array& y) {
  DeviceGuard guard(x.device().index);
  dispatch_floating(x.dtype(), "average_pooling_2d", [&](auto t) {
    using T = decltype(t);
    const T scale = T(1) / static_cast<T>(p.kh * p.kw);
    launch_elementwise("average_pooling_2d", y.size(), average_pool_forward_kernel<T>, p, scale,
                       x.data<T>(), y.data<T>(), y.size());
  });
}

void average_pool_2d_backward(const Array& gy, const Pool2D& p, Array& gx) {
  DeviceGuard guard(gx.device().index);
  dispatch_floating(gx.dtype(), "average_pooling_2d", [&](auto t) {
    using T = decltype(t);
    const T scale = T(1) / static_cast<T>(p.kh * p.kw);
    launch_elementwise("average_pooling_2d", gx.size(), average_pool_backward_kernel<T>, p, scale,
                       gy.data<T>(), gx.data<T>(), gx.size());
  });
}

}  // namespace

void register_average_pooling_2d_kernels() {
  constexpr int32_t gpu = CH_DEVICE_CUDA;
  kernels::average_pool_2d_forward.set(gpu, average_pool_2d_forward);
  kernels::average_pool_2d_backward.set(gpu, average_pool_2d_backward);
}

}  // namespace chainerc::cuda
