// CUDA kernels of softmax over axis 1 and its gradient. An (N, C) array with
// enough channels is done a block per row (coalesced reads along the row,
// block_max / block_sum of cuda/ops/reduce.cuh); otherwise, and for
// (N, C, ...) arrays, a thread per (n, trailing position) column walks the C
// channels, which keeps neighbouring threads on neighbouring elements.
// exp is pointwise::Exp; y = exp(x - max) * (1 / sum) as on the CPU.
#include "cuda/ops/elementwise.cuh"
#include "cuda/ops/kernel_list.h"
#include "cuda/ops/reduce.cuh"
#include "kernels/activation.h"
#include "kernels/pointwise/arithmetic.h"

namespace chainerc::cuda {
namespace {

// (N, C, trailing axes' product): softmax runs over the C channels.
using Layout = AxisSplit;

// Rows of at least this many channels (inner = 1) get a block each.
constexpr int64_t kRowPerBlock = 64;

template <typename T>
__global__ void softmax_rows_kernel(const T* __restrict__ x, T* __restrict__ y, int64_t rows,
                                    int64_t c) {
  __shared__ T scratch[kBlockThreads];
  const pointwise::Exp exp_f;
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const T* xr = x + row * c;
    T* yr = y + row * c;
    T m = xr[0];
    for (int64_t j = threadIdx.x; j < c; j += blockDim.x) m = xr[j] > m ? xr[j] : m;
    m = block_max(m, scratch);
    T s = 0;
    for (int64_t j = threadIdx.x; j < c; j += blockDim.x) {
      const T e = exp_f(xr[j] - m);
      yr[j] = e;
      s += e;
    }
    const T r = T(1) / block_sum(s, scratch);
    for (int64_t j = threadIdx.x; j < c; j += blockDim.x) yr[j] *= r;
  }
}

template <typename T>
__global__ void softmax_columns_kernel(const T* __restrict__ x, T* __restrict__ y, Layout l) {
  const pointwise::Exp exp_f;
  const int64_t n = l.outer * l.inner, c = l.extent, inner = l.inner;
  for (int64_t p = grid_start(); p < n; p += grid_step()) {
    const int64_t base = (p / inner) * c * inner + p % inner;
    const T* xc = x + base;
    T* yc = y + base;
    const T* const x_end = xc + c * inner;
    T m = *xc;
    for (const T* q = xc + inner; q < x_end; q += inner) m = *q > m ? *q : m;
    T s = 0;
    T* q_out = yc;
    for (const T* q = xc; q < x_end; q += inner, q_out += inner) {
      const T e = exp_f(*q - m);
      *q_out = e;
      s += e;
    }
    const T r = T(1) / s;
    for (T* q = yc; q < yc + c * inner; q += inner) *q *= r;
  }
}

template <typename T>
__global__ void softmax_grad_rows_kernel(const T* __restrict__ y, const T* __restrict__ gy,
                                         T* __restrict__ gx, int64_t rows, int64_t c) {
  __shared__ T scratch[kBlockThreads];
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const int64_t o = row * c;
    T s = 0;
    for (int64_t j = threadIdx.x; j < c; j += blockDim.x) s += gy[o + j] * y[o + j];
    s = block_sum(s, scratch);
    for (int64_t j = threadIdx.x; j < c; j += blockDim.x) gx[o + j] = y[o + j] * (gy[o + j] - s);
  }
}

template <typename T>
__global__ void softmax_grad_columns_kernel(const T* __restrict__ y, const T* __restrict__ gy,
                                            T* __restrict__ gx, Layout l) {
  const int64_t n = l.outer * l.inner, c = l.extent, inner = l.inner;
  for (int64_t p = grid_start(); p < n; p += grid_step()) {
    const int64_t base = (p / inner) * c * inner + p % inner;
    T s = 0;
    for (int64_t j = 0; j < c; ++j) s += gy[base + j * inner] * y[base + j * inner];
    for (int64_t j = 0; j < c; ++j) {
      const int64_t k = base + j * inner;
      gx[k] = y[k] * (gy[k] - s);
    }
  }
}

bool per_block(const Layout& l) { return l.inner == 1 && l.extent >= kRowPerBlock; }

void softmax_kernel(const Array& x, Array& y) {
  const Layout l = split_at_axis(x.shape(), 1);
  if (l.extent == 0 || l.outer * l.inner == 0) return;  // empty: no maximum to take
  DeviceGuard guard(x.device().index);
  dispatch_floating(x.dtype(), "softmax", [&](auto t) {
    using T = decltype(t);
    if (per_block(l))
      check_launch(launch(softmax_rows_kernel<T>, blocks_for(l.outer * kBlockThreads),
                          kBlockThreads, 0, nullptr, x.data<T>(), y.data<T>(), l.outer, l.extent),
                   "softmax");
    else
      launch_elementwise("softmax", l.outer * l.inner, softmax_columns_kernel<T>, x.data<T>(),
                         y.data<T>(), l);
  });
}

void softmax_grad_kernel(const Array& y, const Array& gy, Array& gx) {
  const Layout l = split_at_axis(y.shape(), 1);
  if (l.extent == 0 || l.outer * l.inner == 0) return;
  DeviceGuard guard(y.device().index);
  dispatch_floating(y.dtype(), "softmax", [&](auto t) {
    using T = decltype(t);
    if (per_block(l))
      check_launch(
          launch(softmax_grad_rows_kernel<T>, blocks_for(l.outer * kBlockThreads), kBlockThreads, 0,
                 nullptr, y.data<T>(), gy.data<T>(), gx.data<T>(), l.outer, l.extent),
          "softmax_grad");
    else
      launch_elementwise("softmax_grad", l.outer * l.inner, softmax_grad_columns_kernel<T>,
                         y.data<T>(), gy.data<T>(), gx.data<T>(), l);
  });
}

}  // namespace

void register_softmax_kernels() {
  kernels::softmax.set(CH_DEVICE_CUDA, softmax_kernel);
  kernels::softmax_grad.set(CH_DEVICE_CUDA, softmax_grad_kernel);
}

}  // namespace chainerc::cuda
