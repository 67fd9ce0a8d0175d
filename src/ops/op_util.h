// Checks and kernels shared by the built-in functions' files.
#pragma once

#include "backend/cpu/elementwise.h"
#include "core/array.h"
#include "core/error.h"

namespace chainerc::ops {

// A float32/float64 CPU array (Error naming the function otherwise).
inline void check_float(const char* who, const Array& x) {
  if (!is_floating(x.dtype()))
    fail(CH_ERR_DTYPE, who, ": input is a ", x.describe(), "; float32 or float64 expected");
  cpu::require_cpu(x, who);
}

// Two operands of one float dtype on one device.
inline void check_float_pair(const char* who, const Array& a, const Array& b) {
  check_float(who, a);
  check_float(who, b);
  if (a.dtype() != b.dtype())
    fail(CH_ERR_DTYPE, who, ": operands have different dtypes (", dtype_name(a.dtype()), " and ",
         dtype_name(b.dtype()), ")");
  if (a.device() != b.device())
    fail(CH_ERR_DEVICE, who, ": operands are on different devices (", a.device().to_string(),
         " and ", b.device().to_string(), ")");
}

// y[i] = f(x[i]) for a float array, f called with the element type.
template <typename F>
Array unary(const char* who, const Array& x, F f) {
  check_float(who, x);
  Array y = Array::empty_like(x);
  dispatch_floating(x.dtype(), who, [&](auto t) {
    using T = decltype(t);
    cpu::map(x.data<T>(), y.data<T>(), x.size(), [f](T v) { return f(v); });
  });
  return y;
}

// out[i] = f(a[i], b[i]) for same-shaped float arrays.
template <typename F>
Array binary_same(const char* who, const Array& a, const Array& b, F f) {
  Array y = Array::empty_like(a);
  dispatch_floating(a.dtype(), who, [&](auto t) {
    using T = decltype(t);
    const T* pa = a.data<T>();
    const T* pb = b.data<T>();
    T* py = y.data<T>();
    for (int64_t i = 0, n = a.size(); i < n; ++i) py[i] = f(pa[i], pb[i]);
  });
  return y;
}

// out = f(a, b) with NumPy broadcasting.
template <typename F>
Array binary_broadcast(const char* who, const Array& a, const Array& b, F f) {
  check_float_pair(who, a, b);
  Shape s = broadcast_shapes(a.shape(), b.shape(), who);
  Array y = Array::empty(a.dtype(), s, a.device());
  dispatch_floating(a.dtype(), who, [&](auto t) {
    using T = decltype(t);
    cpu::binary_broadcast(a.data<T>(), a.shape(), b.data<T>(), b.shape(), y.data<T>(), s,
                          [&](T u, T v) { return f(u, v); });
  });
  return y;
}

}  // namespace chainerc::ops
