// CUDA kernel of Linear's bias gradient (its products go through the gemm
// kernel): one thread per output column adds the column of gy in row order,
// as the CPU kernel does (consecutive threads read consecutive elements).
#include "cuda/ops/elementwise.cuh"
#include "cuda/ops/kernel_list.h"
#include "kernels/connection.h"

namespace chainerc::cuda {
namespace {

template <typename T>
__global__ void bias_grad_kernel(const T* __restrict__ gy, T* __restrict__ gb, int64_t n,
                                 int64_t out) {
  for (int64_t j = grid_start(); j < out; j += grid_step()) {
    T acc = gb[j];
    for (int64_t i = 0; i < n; ++i) acc += gy[i * out + j];
    gb[j] = acc;
  }
}

void linear_bias_grad(const Array& gy, Array& gb) {
  DeviceGuard guard(gy.device().index);
  const int64_t n = gy.shape()[0], out = gb.size();
  dispatch_floating(gy.dtype(), "Linear", [&](auto t) {
    using T = decltype(t);
    launch_elementwise("linear_bias_grad", out, bias_grad_kernel<T>, gy.data<T>(), gb.data<T>(), n,
                       out);
  });
}

}  // namespace

void register_linear_kernels() { kernels::linear_bias_grad.set(CH_DEVICE_CUDA, linear_bias_grad); }

}  // namespace chainerc::cuda
