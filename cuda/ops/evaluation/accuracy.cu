// CUDA kernel of accuracy in two launches, without atomics (the result does
// not depend on the grid): a thread per row finds the row's first maximum
// (strict > from the left, as the CPU does) and each block writes how many
// of its rows match their label (block_sum) to a partial count; one block
// then adds the partial counts and writes the fraction (NaN for N = 0, 0 / 0
// as on the CPU). Counts are doubles: exact up to 2^53 rows.
#include "cuda/ops/elementwise.cuh"
#include "cuda/ops/kernel_list.h"
#include "cuda/ops/reduce.cuh"
#include "kernels/evaluation.h"

namespace chainerc::cuda {
namespace {

template <typename T>
__global__ void accuracy_count_kernel(const T* __restrict__ y, const int32_t* __restrict__ t,
                                      double* __restrict__ partial, int64_t n, int64_t c) {
  __shared__ double scratch[kBlockThreads];
  double correct = 0;
  for (int64_t i = grid_start(); i < n; i += grid_step()) {
    const T* row = y + i * c;
    int64_t best = 0;
    for (int64_t j = 1; j < c; ++j)
      if (row[j] > row[best]) best = j;
    correct += best == t[i] ? 1.0 : 0.0;
  }
  correct = block_sum(correct, scratch);
  if (threadIdx.x == 0) partial[blockIdx.x] = correct;
}

template <typename T>
__global__ void accuracy_total_kernel(const double* __restrict__ partial, int64_t blocks,
                                      T* __restrict__ out, int64_t n) {
  __shared__ double scratch[kBlockThreads];
  double total = 0;
  for (int64_t b = threadIdx.x; b < blocks; b += blockDim.x) total += partial[b];
  total = block_sum(total, scratch);
  if (threadIdx.x == 0) out[0] = static_cast<T>(total / static_cast<double>(n));
}

void accuracy_kernel(const Array& y, const Array& t, Array& out) {
  DeviceGuard guard(y.device().index);
  const int64_t n = y.shape()[0];
  const int64_t c = n ? y.size() / n : 0;
  const unsigned blocks = blocks_for(n);
  Array partial = Array::empty(DType::Float64, Shape{static_cast<int64_t>(blocks)}, y.device());
  dispatch_floating(y.dtype(), "accuracy", [&](auto tag) {
    using T = decltype(tag);
    check_launch(launch(accuracy_count_kernel<T>, blocks, kBlockThreads, 0, nullptr, y.data<T>(),
                        t.data<int32_t>(), partial.data<double>(), n, c),
                 "accuracy");
    check_launch(launch(accuracy_total_kernel<T>, 1, kBlockThreads, 0, nullptr,
                        partial.data<double>(), static_cast<int64_t>(blocks), out.data<T>(), n),
                 "accuracy");
  });
}

}  // namespace

void register_accuracy_kernels() { kernels::accuracy.set(CH_DEVICE_CUDA, accuracy_kernel); }

}  // namespace chainerc::cuda
