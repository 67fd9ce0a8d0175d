// CUDA kernels of max_pooling_2d on NCHW arrays. Forward: one thread per
// output element (the first maximum in window order, as the CPU's
// pool_window). Backward: one thread per input element gathers the gradients
// of the outputs whose argmax it is, in output order (no atomics: the sums
// are deterministic and equal the CPU's).
#include "cuda/ops/elementwise.cuh"
#include "cuda/ops/kernel_list.h"
#include "cuda/ops/pooling/pool_window.cuh"
#include "kernels/pooling.h"

namespace chainerc::cuda {
namespace {

using kernels::Pool2D;

template <typename T>
__global__ void max_pool_forward_kernel(Pool2D p, const T* __restrict__ x, T* __restrict__ y,
                                        int32_t* __restrict__ argmax, int64_t n) {
  for (int64_t i = grid_start(); i < n; i += grid_step()) {
    const int64_t ox = i % p.ow, oy = (i / p.ow) % p.oh, plane = i / (p.ow * p.oh);
    const Window win = window_of(p, oy, ox);
    if (win.ya >= win.yb || win.xa >= win.xb) {
      y[i] = negative_infinity<T>();
      argmax[i] = -1;
      continue;
    }
    const T* xs = x + plane * p.h * p.w;
    int64_t arg = win.ya * p.w + win.xa;
    T best = xs[arg];
    for (int64_t iy = win.ya; iy < win.yb; ++iy)
      for (int64_t ix = win.xa; ix < win.xb; ++ix) {
        const T v = xs[iy * p.w + ix];
        if (v > best) {
          best = v;
          arg = iy * p.w + ix;
        }
      }
    y[i] = best;
    argmax[i] = static_cast<int32_t>(arg);
  }
}

template <typename T>
__global__ void max_pool_backward_kernel(Pool2D p, const T* __restrict__ gy,
                                         const int32_t* __restrict__ argmax, T* __restrict__ gx,
                                         int64_t n) {
  for (int64_t i = grid_start(); i < n; i += grid_step()) {
    const int64_t ix = i % p.w, iy = (i / p.w) % p.h, plane = i / (p.w * p.h);
    const Covering cov = covering(p, iy, ix);
    const int64_t base = plane * p.oh * p.ow;
    const int32_t self = static_cast<int32_t>(iy * p.w + ix);
    T acc = 0;
    for (int64_t oy = cov.oya; oy < cov.oyb; ++oy)
      for (int64_t ox = cov.oxa; ox < cov.oxb; ++ox) {
        const int64_t o = base + oy * p.ow + ox;
        if (argmax[o] == self) acc += gy[o];
      }
    gx[i] += acc;
  }
}

void max_pool_2d_forward(const Array& x, const Pool2D& p, Array& y, Array& argmax) {
  DeviceGuard guard(x.device().index);
  dispatch_floating(x.dtype(), "max_pooling_2d", [&](auto t) {
    using T = decltype(t);
    launch_elementwise("max_pooling_2d", y.size(), max_pool_forward_kernel<T>, p, x.data<T>(),
                       y.data<T>(), argmax.data<int32_t>(), y.size());
  });
}

void max_pool_2d_backward(const Array& gy, const Array& argmax, const Pool2D& p, Array& gx) {
  DeviceGuard guard(gx.device().index);
  dispatch_floating(gx.dtype(), "max_pooling_2d", [&](auto t) {
    using T = decltype(t);
    launch_elementwise("max_pooling_2d", gx.size(), max_pool_backward_kernel<T>, p, gy.data<T>(),
                       argmax.data<int32_t>(), gx.data<T>(), gx.size());
  });
}

}  // namespace

void register_max_pooling_2d_kernels() {
  constexpr int32_t gpu = CH_DEVICE_CUDA;
  kernels::max_pool_2d_forward.set(gpu, max_pool_2d_forward);
  kernels::max_pool_2d_backward.set(gpu, max_pool_2d_backward);
}

}  // namespace chainerc::cuda
