// CPU kernel converting a user's initial parameter array to the parameter's dtype.
#include "backend/cpu/kernel_list.h"
#include "kernels/connection.h"

namespace chainerc::cpu {
namespace {

template <typename D>
void convert_to(const Array& x, D* dst) {
  const int64_t n = x.size();
  switch (x.dtype()) {
    case DType::Float32:
      for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<D>(x.data<float>()[i]);
      break;
    case DType::Float64:
      for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<D>(x.data<double>()[i]);
      break;
    case DType::Int32:
      for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<D>(x.data<int32_t>()[i]);
      break;
  }
}

void convert_dtype(const Array& x, Array& y) {
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

void register_parameter_kernels() { kernels::convert_dtype.set(CH_DEVICE_CPU, convert_dtype); }

}  // namespace chainerc::cpu
