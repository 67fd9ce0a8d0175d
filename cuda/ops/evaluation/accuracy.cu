// CUDA kernel of accuracy: one block; each thread finds the first maximum of
// its rows (strict > from the left, as the CPU does) and counts the rows
// whose label it matches; block_sum adds the counts and thread 0 writes the
// fraction (NaN for N = 0, 0 / 0 as on the CPU).
#include "cuda/ops/elementwise.cuh"
#include "cuda/ops/kernel_list.h"
#include "cuda/ops/reduce.cuh"
#include "kernels/evaluation.h"

namespace chainerc::cuda {
namespace {

template <typename T>
__global__ void accuracy_kernel_impl(const T* __restrict__ y, const int32_t* __restrict__ t,
                                     T* __restrict__ out, int64_t n, int64_t c) {
  __shared__ long long scratch[kBlockThreads];
  long long correct = 0;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
    const T* row = y + i * c;
    int64_t best = 0;
    for (int64_t j = 1; j < c; ++j)
      if (row[j] > row[best]) best = j;
    correct += best == t[i];
  }
  correct = block_sum(correct, scratch);
  if (threadIdx.x == 0)
    out[0] = static_cast<T>(static_cast<double>(correct) / static_cast<double>(n));
}

void accuracy_kernel(const Array& y, const Array& t, Array& out) {
  DeviceGuard guard(y.device().index);
  const int64_t n = y.shape()[0];
  const int64_t c = n ? y.size() / n : 0;
  dispatch_floating(y.dtype(), "accuracy", [&](auto tag) {
    using T = decltype(tag);
    check_launch(launch(accuracy_kernel_impl<T>, 1, kBlockThreads, 0, nullptr, y.data<T>(),
                        t.data<int32_t>(), out.data<T>(), n, c),
                 "accuracy");
  });
}

}  // namespace

void register_accuracy_kernels() { kernels::accuracy.set(CH_DEVICE_CUDA, accuracy_kernel); }

}  // namespace chainerc::cuda
