// CUDA kernels of the row normalizations (layer_normalization,
// rms_normalization, group_normalization; kernels::RowNorm): x viewed as
// (rows, D).
//
// Forward: a block per row (grid-stride over rows): the threads sum their
// elements in double, merged in a fixed tree; the mean, then the squared
// deviations from it, then y written by the same block.
// Backward: a block per row for gx (its two sums, sum(gy gamma) and
// sum(gy gamma x_hat), then gx); the parameter gradients by a thread per
// parameter index and range of samples into partial sums (in double), which a
// thread per index adds in range order. No atomics: the order of every
// addition depends on the shape only.
#include <cmath>

#include "cuda/ops/elementwise.cuh"
#include "cuda/ops/kernel_list.h"
#include "kernels/normalization.h"

namespace chainerc::cuda {
namespace {

using kernels::RowNorm;

// Blocks of the per-row kernels: rows are grid-strided past this.
#if defined(CH_CUDA_EMULATED_RUNTIME)
constexpr int64_t kMaxRowBlocks = 8;
#else
constexpr int64_t kMaxRowBlocks = 65535;
#endif

unsigned row_blocks(int64_t rows) {
  return static_cast<unsigned>(rows < kMaxRowBlocks ? rows : kMaxRowBlocks);
}

// The block's values of v summed in a fixed tree (blockDim.x = kBlockThreads);
// every thread gets the sum. scratch: kBlockThreads doubles.
__device__ double block_sum(double v, double* scratch) {
  const unsigned t = threadIdx.x;
  __syncthreads();  // scratch free from an earlier call
  scratch[t] = v;
  __syncthreads();
  for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
    if (t < s) scratch[t] += scratch[t + s];
    __syncthreads();
  }
  return scratch[0];
}

// The parameter index of column j of row i.
__device__ __forceinline__ int64_t param_index(const RowNorm& p, int64_t i, int64_t j) {
  return (i % p.groups) * (p.D / p.R) + j / p.R;
}

template <typename T>
__global__ void row_norm_forward_kernel(const T* __restrict__ x, const T* __restrict__ gamma,
                                        const T* __restrict__ beta, RowNorm p, T* __restrict__ y,
                                        T* __restrict__ mean_out, T* __restrict__ inv_out) {
  __shared__ double scratch[kBlockThreads];
  const double inv_d = 1.0 / static_cast<double>(p.D);
  for (int64_t i = blockIdx.x; i < p.rows; i += gridDim.x) {
    const T* xr = x + i * p.D;
    double mean = 0;
    if (p.center) {
      double s = 0;
      for (int64_t j = threadIdx.x; j < p.D; j += blockDim.x) s += static_cast<double>(xr[j]);
      mean = block_sum(s, scratch) * inv_d;
    }
    const T mu = static_cast<T>(mean);
    double s2 = 0;
    for (int64_t j = threadIdx.x; j < p.D; j += blockDim.x) {
      const double d = static_cast<double>(xr[j] - mu);
      s2 += d * d;
    }
    const double var = block_sum(s2, scratch) * inv_d;
    const T inv = static_cast<T>(1.0 / sqrt(var + p.eps));
    if (threadIdx.x == 0) {
      mean_out[i] = mu;
      inv_out[i] = inv;
    }
    T* yr = y + i * p.D;
    for (int64_t j = threadIdx.x; j < p.D; j += blockDim.x) {
      const int64_t q = param_index(p, i, j);
      yr[j] = (xr[j] - mu) * inv * gamma[q] + (beta ? beta[q] : T(0));
    }
  }
}

template <typename T>
__global__ void row_norm_grad_x_kernel(const T* __restrict__ x, const T* __restrict__ gy,
                                       const T* __restrict__ gamma, const T* __restrict__ mean,
                                       const T* __restrict__ inv_std, RowNorm p,
                                       T* __restrict__ gx) {
  __shared__ double scratch[kBlockThreads];
  const double inv_d = 1.0 / static_cast<double>(p.D);
  for (int64_t i = blockIdx.x; i < p.rows; i += gridDim.x) {
    const T* xr = x + i * p.D;
    const T* gr = gy + i * p.D;
    const T mu = mean[i], inv = inv_std[i];
    double sg = 0, sgh = 0;
    for (int64_t j = threadIdx.x; j < p.D; j += blockDim.x) {
      const double g = static_cast<double>(gr[j] * gamma[param_index(p, i, j)]);
      sg += g;
      sgh += g * static_cast<double>((xr[j] - mu) * inv);
    }
    const T a = p.center ? static_cast<T>(block_sum(sg, scratch) * inv_d) : T(0);
    const T b = static_cast<T>(block_sum(sgh, scratch) * inv_d);
    T* gxr = gx + i * p.D;
    for (int64_t j = threadIdx.x; j < p.D; j += blockDim.x) {
      const T h = (xr[j] - mu) * inv;
      gxr[j] = inv * (gr[j] * gamma[param_index(p, i, j)] - a - h * b);
    }
  }
}

// Thread (q = parameter index, range blockIdx.y of samples): the sums of
// gy x_hat and gy over the range's rows of q's group and q's R columns,
// into partial[(range * P + q) * 2 ..].
template <typename T>
__global__ void row_norm_param_partial_kernel(const T* __restrict__ x, const T* __restrict__ gy,
                                              const T* __restrict__ mean,
                                              const T* __restrict__ inv_std, RowNorm p, int64_t n,
                                              int64_t per_range, double* __restrict__ partial) {
  const int64_t per_group = p.D / p.R, P = p.groups * per_group;
  const int64_t q = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (q >= P) return;
  const int64_t g = q / per_group, c = q % per_group;
  const int64_t begin = static_cast<int64_t>(blockIdx.y) * per_range;
  const int64_t end = begin + per_range < n ? begin + per_range : n;
  double sgh = 0, sg = 0;
  for (int64_t s = begin; s < end; ++s) {
    const int64_t i = s * p.groups + g;
    const T mu = mean[i], inv = inv_std[i];
    const int64_t off = i * p.D + c * p.R;
    for (int64_t r = 0; r < p.R; ++r) {
      const T v = gy[off + r];
      sg += static_cast<double>(v);
      sgh += static_cast<double>(v * ((x[off + r] - mu) * inv));
    }
  }
  double* out = partial + (static_cast<int64_t>(blockIdx.y) * P + q) * 2;
  out[0] = sgh;
  out[1] = sg;
}

template <typename T>
__global__ void row_norm_param_finish_kernel(const double* __restrict__ partial, int64_t ranges,
                                             int64_t P, T* __restrict__ ggamma,
                                             T* __restrict__ gbeta) {
  for (int64_t q = grid_start(); q < P; q += grid_step()) {
    double sgh = 0, sg = 0;
    for (int64_t k = 0; k < ranges; ++k) {
      sgh += partial[(k * P + q) * 2];
      sg += partial[(k * P + q) * 2 + 1];
    }
    ggamma[q] = static_cast<T>(sgh);
    if (gbeta) gbeta[q] = static_cast<T>(sg);
  }
}

void row_norm_forward(const Array& x, const Array& gamma, const Array& beta, const RowNorm& p,
                      Array& y, Array& mean, Array& inv_std) {
  if (p.rows <= 0 || p.D <= 0) return;
  DeviceGuard guard(x.device().index);
  const char* who = "row_normalization";
  dispatch_floating(x.dtype(), who, [&](auto t) {
    using T = decltype(t);
    check_launch(launch(row_norm_forward_kernel<T>, row_blocks(p.rows), kBlockThreads, 0, nullptr,
                        x.data<T>(), gamma.data<T>(), beta.defined() ? beta.data<T>() : nullptr, p,
                        y.data<T>(), mean.data<T>(), inv_std.data<T>()),
                 who);
  });
}

void row_norm_backward(const Array& x, const Array& gy, const Array& gamma, const Array& mean,
                       const Array& inv_std, const RowNorm& p, Array& gx, Array& ggamma,
                       Array& gbeta) {
  DeviceGuard guard(gy.device().index);
  const char* who = "row_normalization";
  dispatch_floating(gy.dtype(), who, [&](auto t) {
    using T = decltype(t);
    T* pgb = gbeta.defined() ? gbeta.data<T>() : nullptr;
    if (p.rows <= 0 || p.D <= 0) {  // no values: the parameters' gradients are zeros
      check(cudaMemsetAsync(ggamma.raw(), 0, ggamma.nbytes(), nullptr), who, "cudaMemsetAsync");
      if (pgb)
        check(cudaMemsetAsync(gbeta.raw(), 0, gbeta.nbytes(), nullptr), who, "cudaMemsetAsync");
      return;
    }
    if (gx.defined())
      check_launch(launch(row_norm_grad_x_kernel<T>, row_blocks(p.rows), kBlockThreads, 0, nullptr,
                          x.data<T>(), gy.data<T>(), gamma.data<T>(), mean.data<T>(),
                          inv_std.data<T>(), p, gx.data<T>()),
                   who);
    const int64_t P = p.groups * (p.D / p.R), n = p.rows / p.groups;
    // Ranges of samples: enough threads to fill the GPU, at least 16 samples each.
    const int64_t param_blocks = (P + kBlockThreads - 1) / kBlockThreads;
    int64_t ranges = 1024 / param_blocks;
    if (ranges > n / 16) ranges = n / 16;
    if (ranges < 1) ranges = 1;
    if (ranges > 65535) ranges = 65535;
    const int64_t per_range = (n + ranges - 1) / ranges;
    ranges = (n + per_range - 1) / per_range;
    Array partial = Array::empty(DType::Float64, Shape{ranges * P * 2}, gy.device());
    check_launch(launch(row_norm_param_partial_kernel<T>,
                        dim3(static_cast<unsigned>(param_blocks), static_cast<unsigned>(ranges)),
                        kBlockThreads, 0, nullptr, x.data<T>(), gy.data<T>(), mean.data<T>(),
                        inv_std.data<T>(), p, n, per_range, partial.data<double>()),
                 who);
    launch_elementwise(who, P, row_norm_param_finish_kernel<T>,
                       static_cast<const double*>(partial.data<double>()), ranges, P,
                       ggamma.data<T>(), pgb);
  });
}

}  // namespace

void register_row_normalization_kernels() {
  constexpr int32_t gpu = CH_DEVICE_CUDA;
  kernels::row_norm_forward.set(gpu, row_norm_forward);
  kernels::row_norm_backward.set(gpu, row_norm_backward);
}

}  // namespace chainerc::cuda
