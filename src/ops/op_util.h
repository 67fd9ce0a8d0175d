// Checks and kernel calls shared by the built-in functions' files.
#pragma once

#include "core/array.h"
#include "core/error.h"
#include "core/variable.h"
#include "kernels/math.h"
#include "kernels/registry.h"

namespace chainerc::ops {

// Declares a function's backward over variables (Function::backward_graph).
#define CH_GRAPH_BACKWARD                                                  \
  bool has_graph_backward() const override { return true; }                \
  std::vector<VarPtr> backward_graph([[maybe_unused]] const FuncPtr& self, \
                                     const std::vector<VarPtr>& gy) override

// A float32/float64 array (Error naming the function otherwise). Its
// device is the kernels' business: one without them is refused there.
inline void check_float(const char* who, const Array& x) {
  if (!is_floating(x.dtype()))
    fail(CH_ERR_DTYPE, who, ": input is a ", x.describe(), "; float32 or float64 expected");
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

// Kernel calls that allocate their output on the input's device.

// y = k(x), y like x.
inline Array run(const kernels::Kernel<kernels::UnaryFn>& k, const Array& x) {
  Array y = Array::empty_like(x);
  k(x, y);
  return y;
}
// y = k(x, s), y like x.
inline Array run(const kernels::Kernel<kernels::UnaryScalarFn>& k, const Array& x, double s) {
  Array y = Array::empty_like(x);
  k(x, s, y);
  return y;
}
// y = k(a, b) for same-shaped a and b, y like a.
inline Array run(const kernels::Kernel<kernels::BinaryFn>& k, const Array& a, const Array& b) {
  Array y = Array::empty_like(a);
  k(a, b, y);
  return y;
}
// y = k(a, b, s) for same-shaped a and b, y like a.
inline Array run(const kernels::Kernel<kernels::BinaryScalarFn>& k, const Array& a, const Array& b,
                 double s) {
  Array y = Array::empty_like(a);
  k(a, b, s, y);
  return y;
}
// A backward's gx = k(gy, b) (or k(gy, b, s)) for gy and b of one shape: over
// gy itself where the call holds the only reference to it (Array::unshared;
// the kernels take an output that is their first operand), so that no new
// array is written while gy is still in cache, else into a new array like gy.
inline Array run_over_grad(const kernels::Kernel<kernels::BinaryFn>& k, const Array& gy,
                           const Array& b) {
  Array gx = gy.unshared() ? gy : Array::empty_like(gy);
  k(gy, b, gx);
  return gx;
}
inline Array run_over_grad(const kernels::Kernel<kernels::BinaryScalarFn>& k, const Array& gy,
                           const Array& b, double s) {
  Array gx = gy.unshared() ? gy : Array::empty_like(gy);
  k(gy, b, s, gx);
  return gx;
}
// y = k(a, b) with NumPy broadcasting, after checking both are float arrays
// of one dtype on one device.
inline Array run_broadcast(const char* who, const kernels::Kernel<kernels::BroadcastFn>& k,
                           const Array& a, const Array& b) {
  check_float_pair(who, a, b);
  Array y = Array::empty(a.dtype(), broadcast_shapes(a.shape(), b.shape(), who), a.device());
  k(a, b, y);
  return y;
}
// g summed to shape s (NumPy: undo a broadcast); g itself when the shapes match.
inline Array sum_to_shape(const Array& g, const Shape& s) {
  if (g.shape() == s) return g;
  if (s.ndim() > g.ndim() || broadcast_shapes(s, g.shape(), "sum_to") != g.shape())
    fail(CH_ERR_SHAPE, "sum_to: shape ", g.shape().to_string(), " cannot be summed to ",
         s.to_string());
  Array y = Array::empty(g.dtype(), s, g.device());
  kernels::sum_to(g, y);
  return y;
}
// x broadcast to `s` (already checked), materialized.
inline Array broadcast_to_shape(const Array& x, const Shape& s) {
  Array y = Array::empty(x.dtype(), s, x.device());
  kernels::broadcast_to(x, y);
  return y;
}

}  // namespace chainerc::ops
