// CPU kernel converting a user's initial parameter array to the parameter's dtype.
#include "backend/cpu/kernel_list.h"
#include "kernels/connection.h"

namespace chainerc::cpu {
namespace {

void convert_dtype(const Array& x, Array& y) {
  const int64_t n = x.size();
  dispatch_any(x.dtype(), [&](auto s) {
    dispatch_any(y.dtype(), [&](auto d) {
      using S = decltype(s);
      using D = decltype(d);
      const S* src = x.data<S>();
      D* dst = y.data<D>();
      for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<D>(src[i]);
    });
  });
}

}  // namespace

void register_parameter_kernels() { kernels::convert_dtype.set(CH_DEVICE_CPU, convert_dtype); }

}  // namespace chainerc::cpu
