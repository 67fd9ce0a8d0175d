// where: z = x where condition is nonzero, else y (Chainer's F.where, whose
// condition is a boolean array: here CH_INT32 or a float dtype, nonzero
// meaning true), condition, x and y broadcast together as NumPy does. A
// composition: the condition becomes a constant mask of x's dtype on x's
// device, and z = masked(x) + masked(y, inverted) (math/masked.h) over the
// broadcast x and y, exact (no product, so an inf or NaN not chosen does not
// leak) and differentiable to any order; the gradients are gy where the
// condition holds (x) or not (y), summed back to each input's shape.
#include <vector>

#include "kernels/generated.h"
#include "ops/math/masked.h"
#include "ops/op_util.h"
#include "ops/ops.h"

namespace chainerc::ops {
namespace {

// The condition as a mask (1 or 0) of `dtype` on `device`, of its own shape.
Array mask_of(const Array& c, DType dtype, Device device) {
  if (c.dtype() == dtype && c.device() == device) return run(kernels::nonzero_mask, c);
  // Another dtype (int32) or device: converted on the host. The condition is
  // data, not a graph value: one copy each way at most.
  const Array hc = c.device() == Device{} ? c : c.to_device(Device{});
  const int64_t n = c.size();
  Array m;
  dispatch_floating(dtype, "where", [&](auto t) {
    using T = decltype(t);
    std::vector<T> mask(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) mask[static_cast<size_t>(i)] = hc.get(i) != 0 ? T(1) : T(0);
    m = Array::from_host(dtype, c.shape(), mask.data(), device);
  });
  return m;
}

VarPtr broadcast_var(const VarPtr& v, const Shape& s) {
  return v->data.shape() == s ? v : broadcast_to(v, s);
}

}  // namespace

VarPtr where(const Array& condition, const VarPtr& x, const VarPtr& y) {
  check_float_pair("where", x->data, y->data);
  if (condition.dtype() != DType::Int32 && !is_floating(condition.dtype()))
    fail(CH_ERR_DTYPE, "where: condition is a ", condition.describe(),
         "; int32, float32 or float64 expected");
  const Shape s = broadcast_shapes(broadcast_shapes(condition.shape(), x->data.shape(), "where"),
                                   y->data.shape(), "where");
  Array mask = mask_of(condition, x->data.dtype(), x->data.device());
  if (mask.shape() != s) mask = broadcast_to_shape(mask, s);
  return add(masked(broadcast_var(x, s), mask, false), masked(broadcast_var(y, s), mask, true));
}

}  // namespace chainerc::ops
