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

template <typename D>
void convert_to(const Array& x, D* y) {
  const int64_t n = x.size();
  switch (x.dtype()) {
    case DType::Float32:
      launch_elementwise("convert_dtype", n, convert_kernel<float, D>, x.data<float>(), y, n);
      break;
    case DType::Float64:
      launch_elementwise("convert_dtype", n, convert_kernel<double, D>, x.data<double>(), y, n);
      break;
    case DType::Int32:
      launch_elementwise("convert_dtype", n, convert_kernel<int32_t, D>, x.data<int32_t>(), y, n);
      break;
  }
}

void convert_dtype(const Array& x, Array& y) {
  DeviceGuard guard(x.device().index);
  switch (y.dtype()) {
    case DType::Float32:
      convert_to(x, y.data<float>());
      break;
    case DType::Float64:
      convert_to(x, y.data<double>());
      break;
    case DType::Int32:
      convert_to(x, y.data<int32_t>());
      break;
  }
}

}  // namespace

void register_parameter_kernels() { kernels::convert_dtype.set(CH_DEVICE_CUDA, convert_dtype); }

}  // namespace chainerc::cuda
