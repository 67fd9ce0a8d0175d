// CUDA kernels of max_pooling_2d on NCHW arrays. Forward: one thread per
// output element (a NaN wins and stays, as the CPU's pool_window); it keeps
// no argmax (kernels/pooling.h allows either), so that a forward through
// cuDNN and this backward, or the other way round, pair. Backward:
// one thread per input element gathers the gradients of the outputs whose
// first maximum (the first position of the window, in window order, where x
// equals y) it is, in output order (no atomics: the sums are deterministic
// and equal the CPU's).
#include "cuda/ops/elementwise.cuh"
#include "cuda/ops/kernel_list.h"
#include "cuda/ops/pooling/pool_window.cuh"
#include "kernels/pooling.h"

namespace chainerc::cuda {
namespace {

using kernels::Pool2D;

// Whether v replaces best as the window's maximum so far (a NaN wins and stays).
template <typename T>
__device__ __forceinline__ bool wins(T v, T best) {
  return v > best || v != v;
}
// Whether v is the window's maximum `target` (a NaN for a NaN).
template <typename T>
__device__ __forceinline__ bool matches(T v, T target) {
  return v == target || (v != v && target != target);
}

template <typename T>
__global__ void max_pool_forward_kernel(Pool2D p, const T* __restrict__ x, T* __restrict__ y,
                                        int64_t n) {
  for (int64_t i = grid_start(); i < n; i += grid_step()) {
    const int64_t ox = i % p.ow, oy = (i / p.ow) % p.oh, plane = i / (p.ow * p.oh);
    const Window win = window_of(p, oy, ox);
    if (win.ya >= win.yb || win.xa >= win.xb) {
      y[i] = negative_infinity<T>();
      continue;
    }
    const T* xs = x + plane * p.h * p.w;
    T best = xs[win.ya * p.w + win.xa];
    for (int64_t iy = win.ya; iy < win.yb; ++iy)
      for (int64_t ix = win.xa; ix < win.xb; ++ix) {
        const T v = xs[iy * p.w + ix];
        best = wins(v, best) ? v : best;
      }
    y[i] = best;
  }
}

// Whether (iy, ix) is the first position of window `win` (in window order)
// holding `target`, given that it holds it.
template <typename T>
__device__ bool first_maximum(const T* xs, const Pool2D& p, const Window& win, T target, int64_t iy,
                              int64_t ix) {
  for (int64_t wy = win.ya; wy <= iy; ++wy) {
    const int64_t end = wy < iy ? win.xb : ix;
    for (int64_t wx = win.xa; wx < end; ++wx)
      if (matches(xs[wy * p.w + wx], target)) return false;
  }
  return true;
}

template <typename T>
__global__ void max_pool_backward_kernel(Pool2D p, const T* __restrict__ x, const T* __restrict__ y,
                                         const T* __restrict__ gy, T* __restrict__ gx, int64_t n) {
  for (int64_t i = grid_start(); i < n; i += grid_step()) {
    const int64_t ix = i % p.w, iy = (i / p.w) % p.h, plane = i / (p.w * p.h);
    const Covering cov = covering(p, iy, ix);
    const int64_t base = plane * p.oh * p.ow;
    const T* xs = x + plane * p.h * p.w;
    const T v = x[i];
    T acc = 0;
    for (int64_t oy = cov.oya; oy < cov.oyb; ++oy)
      for (int64_t ox = cov.oxa; ox < cov.oxb; ++ox) {
        const int64_t o = base + oy * p.ow + ox;
        if (matches(v, y[o]) && first_maximum(xs, p, window_of(p, oy, ox), y[o], iy, ix))
          acc += gy[o];
      }
    gx[i] += acc;
  }
}

// One thread per output element: ggy = ggx at the window's first maximum
// (the first position in window order where x equals y), 0 for none.
template <typename T>
__global__ void max_pool_gather_kernel(Pool2D p, const T* __restrict__ x, const T* __restrict__ y,
                                       const T* __restrict__ ggx, T* __restrict__ ggy, int64_t n) {
  for (int64_t i = grid_start(); i < n; i += grid_step()) {
    const int64_t ox = i % p.ow, oy = (i / p.ow) % p.oh, plane = i / (p.ow * p.oh);
    const Window win = window_of(p, oy, ox);
    const int64_t base = plane * p.h * p.w;
    const T target = y[i];
    T out = 0;
    bool found = false;
    for (int64_t iy = win.ya; iy < win.yb && !found; ++iy)
      for (int64_t ix = win.xa; ix < win.xb && !found; ++ix)
        if (matches(x[base + iy * p.w + ix], target)) {
          out = ggx[base + iy * p.w + ix];
          found = true;
        }
    ggy[i] = out;
  }
}

void max_pool_2d_forward(const Array& x, const Pool2D& p, Array& y, Array& /*argmax: none*/) {
  DeviceGuard guard(x.device().index);
  dispatch_floating(x.dtype(), "max_pooling_2d", [&](auto t) {
    using T = decltype(t);
    launch_elementwise("max_pooling_2d", y.size(), max_pool_forward_kernel<T>, p, x.data<T>(),
                       y.data<T>(), y.size());
  });
}

void max_pool_2d_backward(const Array& x, const Array& y, const Array& /*argmax: none*/,
                          const Array& gy, const Pool2D& p, Array& gx) {
  DeviceGuard guard(gx.device().index);
  dispatch_floating(gx.dtype(), "max_pooling_2d", [&](auto t) {
    using T = decltype(t);
    launch_elementwise("max_pooling_2d", gx.size(), max_pool_backward_kernel<T>, p, x.data<T>(),
                       y.data<T>(), gy.data<T>(), gx.data<T>(), gx.size());
  });
}

void max_pool_2d_gather(const Array& x, const Array& y, const Array& /*argmax: none*/,
                        const Array& ggx, const Pool2D& p, Array& ggy) {
  DeviceGuard guard(ggy.device().index);
  dispatch_floating(ggy.dtype(), "max_pooling_2d", [&](auto t) {
    using T = decltype(t);
    launch_elementwise("max_pooling_2d gather", ggy.size(), max_pool_gather_kernel<T>, p,
                       x.data<T>(), y.data<T>(), ggx.data<T>(), ggy.data<T>(), ggy.size());
  });
}

}  // namespace

void register_max_pooling_2d_kernels() {
  constexpr int32_t gpu = CH_DEVICE_CUDA;
  kernels::max_pool_2d_forward.set(gpu, max_pool_2d_forward);
  kernels::max_pool_2d_backward.set(gpu, max_pool_2d_backward);
  kernels::max_pool_2d_gather.set(gpu, max_pool_2d_gather);
}

}  // namespace chainerc::cuda
