// CUDA kernels of mean_squared_error: one kernel writes the difference and
// each block's sum of its squares (at most 1024 blocks, their shares fixed
// by the launch geometry, not by scheduling), one block adds the block sums
// in double. The gradient is element-wise.
#include <algorithm>

#include "cuda/ops/kernel_list.h"
#include "cuda/ops/rows.cuh"
#include "kernels/loss.h"
#include "kernels/pointwise/arithmetic.h"

namespace chainerc::cuda {
namespace {

template <typename T>
__global__ void mse_kernel(const T* __restrict__ x0, const T* __restrict__ x1, T* __restrict__ diff,
                           double* __restrict__ block_sums, int64_t n) {
  __shared__ T scratch[kBlockThreads];
  const pointwise::Sub sub{};
  T acc = 0;
  for (int64_t i = grid_start(); i < n; i += grid_step()) {
    const T d = sub(x0[i], x1[i]);
    diff[i] = d;
    acc += d * d;
  }
  acc = block_sum(acc, scratch);
  if (threadIdx.x == 0) block_sums[blockIdx.x] = static_cast<double>(acc);
}

void mse(const Array& x0, const Array& x1, Array& diff, Array& loss) {
  DeviceGuard guard(x0.device().index);
  const int64_t n = x0.size();
  // At most 1024 blocks: enough to fill a GPU, and the one block that adds
  // their sums has few to add (blocks_for alone would give up to 2^19).
  const unsigned blocks = std::min(blocks_for(n), 1024u);
  Array block_sums = Array::empty(DType::Float64, Shape{static_cast<int64_t>(blocks)}, x0.device());
  dispatch_floating(x0.dtype(), "mean_squared_error", [&](auto tag) {
    using T = decltype(tag);
    check_launch(launch(mse_kernel<T>, blocks, kBlockThreads, 0, nullptr, x0.data<T>(),
                        x1.data<T>(), diff.data<T>(), block_sums.data<double>(), n),
                 "mean_squared_error");
    finish_sum<T>(block_sums, blocks, static_cast<double>(n), loss, "mean_squared_error");
  });
}

// g0 = 2 gloss / size * diff, g1 = -g0.
template <typename T>
__global__ void mse_grad_kernel(const T* __restrict__ diff, const T* __restrict__ gloss,
                                T* __restrict__ g0, T* __restrict__ g1, int64_t n) {
  const T coeff = T(2) * gloss[0] / static_cast<T>(n);
  for (int64_t i = grid_start(); i < n; i += grid_step()) {
    g0[i] = coeff * diff[i];
    g1[i] = -coeff * diff[i];
  }
}

void mse_grad(const Array& diff, const Array& gloss, Array& g0, Array& g1) {
  DeviceGuard guard(diff.device().index);
  dispatch_floating(diff.dtype(), "mean_squared_error", [&](auto tag) {
    using T = decltype(tag);
    launch_elementwise("mean_squared_error_grad", diff.size(), mse_grad_kernel<T>, diff.data<T>(),
                       gloss.data<T>(), g0.data<T>(), g1.data<T>(), diff.size());
  });
}

}  // namespace

void register_mean_squared_error_kernels() {
  kernels::mean_squared_error.set(CH_DEVICE_CUDA, mse);
  kernels::mean_squared_error_grad.set(CH_DEVICE_CUDA, mse_grad);
}

}  // namespace chainerc::cuda
