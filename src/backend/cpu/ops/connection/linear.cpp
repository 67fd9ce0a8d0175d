// CPU kernel of Linear's bias gradient (its products go through the gemm kernel).
#include "backend/cpu/kernel_list.h"
#include "kernels/connection.h"

namespace chainerc::cpu {
namespace {

void linear_bias_grad(const Array& gy, Array& gb) {
  const int64_t n = gy.shape()[0], out = gb.size();
  dispatch_floating(gy.dtype(), "Linear", [&](auto t) {
    using T = decltype(t);
    const T* pgy = gy.data<T>();
    T* pgb = gb.data<T>();
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < out; ++j) pgb[j] += pgy[i * out + j];
  });
}

}  // namespace

void register_linear_kernels() { kernels::linear_bias_grad.set(CH_DEVICE_CPU, linear_bias_grad); }

}  // namespace chainerc::cpu
