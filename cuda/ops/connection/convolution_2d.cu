// CUDA kernels of Convolution2D (NCHW) as im2col + GEMM + col2im, as Chainer
// 1.x did without cuDNN, in the CPU kernel's layout (src/backend/cpu/im2col.h):
// chunks of samples are unfolded into one column matrix of C*kh*kw rows and
// chunk*oh*ow columns, so that one kernels::gemm covers a chunk:
//   forward:  tmp (O, cols) = W (O, C*kh*kw) x col, scattered into y + b;
//   backward: gW += gy_mat (O, cols) x col^T, gcol = W^T x gy_mat, col2im
//             into gx (a gather per input element: no atomics), and gb +=
//             the sums of gy per channel (one block per channel).
#include "cuda/ops/kernel_list.h"
#include "cuda/ops/rows.cuh"
#include "kernels/connection.h"
#include "kernels/math.h"

namespace chainerc::cuda {
namespace {

// Elements of the column buffer per chunk. Under the emulator a small budget
// so that the tests' small shapes run in several chunks.
#if defined(CH_CUDA_EMULATED_RUNTIME)
constexpr int64_t kColumnBudget = int64_t{1} << 12;
#else
constexpr int64_t kColumnBudget = int64_t{1} << 24;
#endif

// col[r, q] for rows r = (c, ky, kx) and columns q = (n - n0) * oh * ow + oy * ow + ox.
template <typename T>
__global__ void im2col_kernel(const T* __restrict__ x, kernels::Conv2D g, int64_t n0, int64_t nc,
                              T* __restrict__ col) {
  const int64_t P = g.oh * g.ow, cols = nc * P, total = g.c * g.kh * g.kw * cols;
  for (int64_t i = grid_start(); i < total; i += grid_step()) {
    const int64_t r = i / cols, q = i - r * cols;
    const int64_t n = q / P, p = q - n * P;
    const int64_t oy = p / g.ow, ox = p - oy * g.ow;
    const int64_t kx = r % g.kw, ky = (r / g.kw) % g.kh, c = r / (g.kw * g.kh);
    const int64_t iy = oy * g.sy - g.ph + ky, ix = ox * g.sx - g.pw + kx;
    T v = 0;
    if (iy >= 0 && iy < g.h && ix >= 0 && ix < g.w)
      v = x[(((n0 + n) * g.c + c) * g.h + iy) * g.w + ix];
    col[i] = v;
  }
}

// gx[n, c, iy, ix] += the column entries that im2col copied from there.
template <typename T>
__global__ void col2im_add_kernel(const T* __restrict__ col, kernels::Conv2D g, int64_t n0,
                                  int64_t nc, T* __restrict__ gx) {
  const int64_t P = g.oh * g.ow, cols = nc * P, plane = g.h * g.w, total = nc * g.c * plane;
  for (int64_t i = grid_start(); i < total; i += grid_step()) {
    const int64_t n = i / (g.c * plane), rest = i - n * g.c * plane;
    const int64_t c = rest / plane, yx = rest - c * plane;
    const int64_t iy = yx / g.w, ix = yx - iy * g.w;
    T acc = 0;
    for (int64_t ky = 0; ky < g.kh; ++ky) {
      const int64_t ty = iy + g.ph - ky;
      if (ty < 0 || ty % g.sy != 0 || ty / g.sy >= g.oh) continue;
      const int64_t oy = ty / g.sy;
      for (int64_t kx = 0; kx < g.kw; ++kx) {
        const int64_t tx = ix + g.pw - kx;
        if (tx < 0 || tx % g.sx != 0 || tx / g.sx >= g.ow) continue;
        const int64_t r = (c * g.kh + ky) * g.kw + kx;
        acc += col[r * cols + n * P + oy * g.ow + tx / g.sx];
      }
    }
    gx[n0 * g.c * plane + i] += acc;
  }
}

// y[n0 + n, o, p] = tmp[o, n * P + p] (+ b[o]).
template <typename T>
__global__ void scatter_bias_kernel(const T* __restrict__ tmp, const T* __restrict__ b, int64_t O,
                                    int64_t P, int64_t n0, int64_t nc, T* __restrict__ y) {
  const int64_t total = nc * O * P, cols = nc * P;
  for (int64_t i = grid_start(); i < total; i += grid_step()) {
    const int64_t n = i / (O * P), rest = i - n * O * P;
    const int64_t o = rest / P, p = rest - o * P;
    y[n0 * O * P + i] = tmp[o * cols + n * P + p] + (b ? b[o] : T(0));
  }
}

// gmat[o, n * P + p] = gy[n0 + n, o, p].
template <typename T>
__global__ void gather_gy_kernel(const T* __restrict__ gy, int64_t O, int64_t P, int64_t n0,
                                 int64_t nc, T* __restrict__ gmat) {
  const int64_t cols = nc * P, total = O * cols;
  for (int64_t i = grid_start(); i < total; i += grid_step()) {
    const int64_t o = i / cols, q = i - o * cols;
    const int64_t n = q / P, p = q - n * P;
    gmat[i] = gy[((n0 + n) * O + o) * P + p];
  }
}

// gb[o] += the sum of gy[:, o, :]; one block per channel.
template <typename T>
__global__ void bias_sum_kernel(const T* __restrict__ gy, int64_t N, int64_t O, int64_t P,
                                T* __restrict__ gb) {
  __shared__ T scratch[kBlockThreads];
  for (int64_t o = blockIdx.x; o < O; o += gridDim.x) {
    T acc = 0;
    for (int64_t i = threadIdx.x; i < N * P; i += blockDim.x) {
      const int64_t n = i / P;
      acc += gy[(n * O + o) * P + (i - n * P)];
    }
    acc = block_sum(acc, scratch);
    if (threadIdx.x == 0) gb[o] += acc;
  }
}

// Samples per chunk: the column buffer and the (O, cols) matrix within the budget.
int64_t chunk_of(int64_t N, int64_t rows, int64_t O, int64_t P) {
  const int64_t per = (rows > O ? rows : O) * P;
  int64_t chunk = kColumnBudget / (per > 0 ? per : 1);
  if (chunk < 1) chunk = 1;
  return chunk < N ? chunk : N;
}

kernels::Gemm product(bool ta, bool tb, int64_t m, int64_t n, int64_t k, double beta) {
  kernels::Gemm p = kernels::Gemm::packed(ta, tb, m, n, k);
  p.beta = beta;
  return p;
}

void conv2d_forward(const Array& x, const Array& W, const Array& b, const kernels::Conv2D& g,
                    Array& y) {
  DeviceGuard guard(x.device().index);
  const int64_t N = x.shape()[0], O = W.shape()[0], P = g.oh * g.ow, rows = g.c * g.kh * g.kw;
  if (N == 0 || O == 0 || P == 0) return;
  const int64_t chunk = chunk_of(N, rows, O, P);
  Array col = Array::empty(x.dtype(), Shape{rows * chunk * P}, x.device());
  Array tmp = Array::empty(x.dtype(), Shape{O * chunk * P}, x.device());
  dispatch_floating(x.dtype(), "convolution_2d", [&](auto t) {
    using T = decltype(t);
    const T* pb = b.defined() ? b.data<T>() : nullptr;
    for (int64_t n0 = 0; n0 < N; n0 += chunk) {
      const int64_t nc = chunk < N - n0 ? chunk : N - n0, cols = nc * P;
      launch_elementwise("convolution_2d im2col", rows * cols, im2col_kernel<T>, x.data<T>(), g, n0,
                         nc, col.data<T>());
      kernels::gemm(product(false, false, O, cols, rows, 0), W, col, tmp);
      launch_elementwise("convolution_2d bias", O * cols, scatter_bias_kernel<T>, tmp.data<T>(), pb,
                         O, P, n0, nc, y.data<T>());
    }
  });
}

void conv2d_backward(const Array& x, const Array& W, const Array& gy, const kernels::Conv2D& g,
                     Array& gW, Array& gb, Array& gx) {
  DeviceGuard guard(x.device().index);
  const int64_t N = x.shape()[0], O = W.shape()[0], P = g.oh * g.ow, rows = g.c * g.kh * g.kw;
  if (N == 0 || O == 0 || P == 0) return;
  const int64_t chunk = chunk_of(N, rows, O, P);
  Array col = Array::empty(x.dtype(), Shape{rows * chunk * P}, x.device());
  Array gmat = Array::empty(x.dtype(), Shape{O * chunk * P}, x.device());
  dispatch_floating(x.dtype(), "convolution_2d", [&](auto t) {
    using T = decltype(t);
    if (gb.defined())
      check_launch(launch(bias_sum_kernel<T>, blocks_for(O * kBlockThreads), kBlockThreads, 0,
                          nullptr, gy.data<T>(), N, O, P, gb.data<T>()),
                   "convolution_2d bias gradient");
    for (int64_t n0 = 0; n0 < N; n0 += chunk) {
      const int64_t nc = chunk < N - n0 ? chunk : N - n0, cols = nc * P;
      launch_elementwise("convolution_2d gy", O * cols, gather_gy_kernel<T>, gy.data<T>(), O, P, n0,
                         nc, gmat.data<T>());
      launch_elementwise("convolution_2d im2col", rows * cols, im2col_kernel<T>, x.data<T>(), g, n0,
                         nc, col.data<T>());
      kernels::gemm(product(false, true, O, rows, cols, 1), gmat, col, gW);
      if (!gx.defined()) continue;
      kernels::gemm(product(true, false, rows, cols, O, 0), W, gmat, col);
      launch_elementwise("convolution_2d col2im", nc * g.c * g.h * g.w, col2im_add_kernel<T>,
                         col.data<T>(), g, n0, nc, gx.data<T>());
    }
  });
}

}  // namespace

void register_convolution_2d_kernels() {
  kernels::conv2d_forward.set(CH_DEVICE_CUDA, conv2d_forward);
  kernels::conv2d_backward.set(CH_DEVICE_CUDA, conv2d_backward);
}

}  // namespace chainerc::cuda
