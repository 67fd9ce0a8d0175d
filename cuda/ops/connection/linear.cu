// CUDA kernel of Linear's bias gradient (its products go through the gemm
// kernel): gb[j] += sum over the rows i of gy[i, j], parallel over the batch
// as well as the columns. Stage 1: the rows are cut into `chunks` ranges
// (grid.y); a block of kCols x kRowThreads threads takes kCols consecutive
// columns (consecutive threads read consecutive elements) and one range, each
// thread adding every kRowThreads-th row of it, then the block adds its
// kRowThreads partial sums in a fixed order. Stage 2 (with more than one
// range): a thread per column adds the ranges' sums in order. The order
// depends only on the shape, so the result is reproducible.
#include "cuda/ops/elementwise.cuh"
#include "cuda/ops/kernel_list.h"
#include "kernels/connection.h"

namespace chainerc::cuda {
namespace {

constexpr int kCols = 32, kRowThreads = 8;
// Rows per range at least, and at most this many ranges.
constexpr int64_t kRowsPerChunk = 256, kMaxChunks = 128;

template <typename T>
__global__ void bias_grad_partial_kernel(const T* __restrict__ gy, T* __restrict__ out, int64_t n,
                                         int64_t cols, int64_t rows_per_chunk, bool accumulate) {
  __shared__ T partial[kRowThreads][kCols];
  const int64_t j = static_cast<int64_t>(blockIdx.x) * kCols + threadIdx.x;
  const int64_t begin = static_cast<int64_t>(blockIdx.y) * rows_per_chunk;
  const int64_t end = begin + rows_per_chunk < n ? begin + rows_per_chunk : n;
  T acc = 0;
  if (j < cols)
    for (int64_t i = begin + threadIdx.y; i < end; i += kRowThreads) acc += gy[i * cols + j];
  partial[threadIdx.y][threadIdx.x] = acc;
  __syncthreads();
  if (threadIdx.y == 0 && j < cols) {
    T s = 0;
    for (int r = 0; r < kRowThreads; ++r) s += partial[r][threadIdx.x];
    // One range: straight into gb; else this range's sum, row blockIdx.y of out.
    if (accumulate)
      out[j] += s;
    else
      out[static_cast<int64_t>(blockIdx.y) * cols + j] = s;
  }
}

template <typename T>
__global__ void bias_grad_finish_kernel(const T* __restrict__ sums, T* __restrict__ gb,
                                        int64_t chunks, int64_t cols) {
  for (int64_t j = grid_start(); j < cols; j += grid_step()) {
    T acc = 0;
    for (int64_t c = 0; c < chunks; ++c) acc += sums[c * cols + j];
    gb[j] += acc;
  }
}

void linear_bias_grad(const Array& gy, Array& gb) {
  const int64_t n = gy.shape()[0], cols = gb.size();
  if (n == 0 || cols == 0) return;
  DeviceGuard guard(gy.device().index);
  int64_t chunks = (n + kRowsPerChunk - 1) / kRowsPerChunk;
  if (chunks > kMaxChunks) chunks = kMaxChunks;
  const int64_t rows_per_chunk = (n + chunks - 1) / chunks;
  chunks = (n + rows_per_chunk - 1) / rows_per_chunk;
  const dim3 grid(static_cast<unsigned>((cols + kCols - 1) / kCols), static_cast<unsigned>(chunks));
  const dim3 block(kCols, kRowThreads);
  dispatch_floating(gy.dtype(), "Linear", [&](auto t) {
    using T = decltype(t);
    if (chunks == 1) {
      check_launch(launch(bias_grad_partial_kernel<T>, grid, block, 0, nullptr, gy.data<T>(),
                          gb.data<T>(), n, cols, rows_per_chunk, true),
                   "linear_bias_grad");
      return;
    }
    Array sums = Array::empty(gy.dtype(), Shape{chunks, cols}, gy.device());
    check_launch(launch(bias_grad_partial_kernel<T>, grid, block, 0, nullptr, gy.data<T>(),
                        sums.data<T>(), n, cols, rows_per_chunk, false),
                 "linear_bias_grad");
    launch_elementwise("linear_bias_grad", cols, bias_grad_finish_kernel<T>, sums.data<T>(),
                       gb.data<T>(), chunks, cols);
  });
}

}  // namespace

void register_linear_kernels() { kernels::linear_bias_grad.set(CH_DEVICE_CUDA, linear_bias_grad); }

}  // namespace chainerc::cuda
