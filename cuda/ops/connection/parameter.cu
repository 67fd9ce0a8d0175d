// CUDA kernel converting an array to another dtype (float32, float64, int32,
// either way; static_cast per element, as the CPU kernel).
#include "cuda/ops/elementwise.cuh"
#include "cuda/ops/kernel_list.h"
#include "kernels/connection.h"

namespace chainerc::cuda {
namespace {

template <typename S, typename D>
__global__ void convert_kernel(const S* __restrict__ x, D* __restrict__ y, int64_t n) {
  for (int64_t i = grid_start(); i < n; i += grid_step()) y[i] = static_cast<D>(x[i]);
}

void convert_dtype(const Array& x, Array& y) {
  DeviceGuard guard(x.device().index);
  const int64_t n = x.size();
  dispatch_any(x.dtype(), [&](auto s) {
    dispatch_any(y.dtype(), [&](auto d) {
      using S = decltype(s);
      using D = decltype(d);
      launch_elementwise("convert_dtype", n, convert_kernel<S, D>, x.data<S>(), y.data<D>(), n);
    });
  });
}

}  // namespace

void register_parameter_kernels() { kernels::convert_dtype.set(CH_DEVICE_CUDA, convert_dtype); }

}  // namespace chainerc::cuda
