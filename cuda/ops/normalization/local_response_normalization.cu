// CUDA kernels of local_response_normalization across axis 1 of x viewed as
// (N, C, R): one thread per element sums its channel window (n channels at
// most, clipped) in channel order, as the CPU's running window does, and
// applies the shared per-element math of pointwise/normalization.h. The
// node keeps x and y only: backward recomputes the unit scales from x.
#include "cuda/ops/elementwise.cuh"
#include "cuda/ops/kernel_list.h"
#include "kernels/normalization.h"
#include "kernels/pointwise/normalization.h"

namespace chainerc::cuda {
namespace {

struct LrnGeometry {
  int64_t C, R, half;
};

// Channels [lo, hi] of the window around channel c.
__device__ __forceinline__ void lrn_window(const LrnGeometry& g, int64_t c, int64_t& lo,
                                           int64_t& hi) {
  lo = c - g.half > 0 ? c - g.half : 0;
  hi = c + g.half < g.C - 1 ? c + g.half : g.C - 1;
}

// unit_scale of element i: k + alpha * the sum of x^2 over its channel window.
template <typename T>
__device__ __forceinline__ T unit_scale_of(const LrnGeometry& g, T k, T alpha,
                                           const T* __restrict__ x, int64_t i) {
  const int64_t c = (i / g.R) % g.C;
  const int64_t base = i - (c * g.R);  // channel 0 at this position
  int64_t lo, hi;
  lrn_window(g, c, lo, hi);
  T s = 0;
  for (int64_t j = lo; j <= hi; ++j) {
    const T v = x[base + j * g.R];
    s += v * v;
  }
  return pointwise::LrnUnitScale{}(s, k, alpha);
}

template <typename T>
__global__ void lrn_forward_kernel(LrnGeometry g, T k, T alpha, T beta, const T* __restrict__ x,
                                   T* __restrict__ y, int64_t n) {
  const pointwise::LrnScale lrn_scale{};
  for (int64_t i = grid_start(); i < n; i += grid_step())
    y[i] = x[i] * lrn_scale(unit_scale_of(g, k, alpha, x, i), beta);
}

// The window sum of y gy / unit_scale needs the unit_scale of every channel
// in the window: each is recomputed from x (n channels of x^2 each).
template <typename T>
__global__ void lrn_backward_kernel(LrnGeometry g, T k, T alpha, T beta, T c2,
                                    const T* __restrict__ x, const T* __restrict__ y,
                                    const T* __restrict__ gy, T* __restrict__ gx, int64_t n) {
  const pointwise::LrnGrad grad{};
  const pointwise::LrnScale lrn_scale{};
  for (int64_t i = grid_start(); i < n; i += grid_step()) {
    const int64_t c = (i / g.R) % g.C;
    const int64_t base = i - (c * g.R);
    int64_t lo, hi;
    lrn_window(g, c, lo, hi);
    T s = 0;
    for (int64_t j = lo; j <= hi; ++j) {
      const int64_t q = base + j * g.R;
      s += y[q] * gy[q] / unit_scale_of(g, k, alpha, x, q);
    }
    gx[i] = grad(gy[i], x[i], lrn_scale(unit_scale_of(g, k, alpha, x, i), beta), s, c2);
  }
}

LrnGeometry geometry(const Array& x, const kernels::Lrn& lrn) {
  const int64_t N = x.shape()[0], C = x.shape()[1];
  return LrnGeometry{C, N > 0 && C > 0 ? x.size() / (N * C) : 0, lrn.n / 2};
}

void lrn_forward(const Array& x, const kernels::Lrn& lrn, Array& y) {
  DeviceGuard guard(x.device().index);
  const LrnGeometry g = geometry(x, lrn);
  dispatch_floating(x.dtype(), "local_response_normalization", [&](auto t) {
    using T = decltype(t);
    launch_elementwise("local_response_normalization", x.size(), lrn_forward_kernel<T>, g,
                       static_cast<T>(lrn.k), static_cast<T>(lrn.alpha), static_cast<T>(lrn.beta),
                       x.data<T>(), y.data<T>(), x.size());
  });
}

void lrn_backward(const Array& x, const Array& y, const Array& gy, const kernels::Lrn& lrn,
                  Array& gx) {
  DeviceGuard guard(x.device().index);
  const LrnGeometry g = geometry(x, lrn);
  dispatch_floating(x.dtype(), "local_response_normalization", [&](auto t) {
    using T = decltype(t);
    launch_elementwise("local_response_normalization", x.size(), lrn_backward_kernel<T>, g,
                       static_cast<T>(lrn.k), static_cast<T>(lrn.alpha), static_cast<T>(lrn.beta),
                       static_cast<T>(2 * lrn.alpha * lrn.beta), x.data<T>(), y.data<T>(),
                       gy.data<T>(), gx.data<T>(), x.size());
  });
}

}  // namespace

void register_local_response_normalization_kernels() {
  constexpr int32_t gpu = CH_DEVICE_CUDA;
  kernels::lrn_forward.set(gpu, lrn_forward);
  kernels::lrn_backward.set(gpu, lrn_backward);
}

}  // namespace chainerc::cuda
