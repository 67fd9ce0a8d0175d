// softmax and log_softmax over any axis (Chainer 7's F.softmax(x, axis=1) and
// F.log_softmax(x, axis=1)). softmax_axis views x as (outer, C, inner) around
// the axis and runs softmax's kernels (axis 1 of that view); log_softmax is
// x - logsumexp(x, axis) (math/reduce.cpp), stable and twice differentiable.
#include "ops/op_util.h"
#include "ops/ops.h"
#include "ops/reduce_util.h"

namespace chainerc::ops {

VarPtr softmax_axis(const VarPtr& x, int32_t axis) {
  const Shape& s = x->data.shape();
  check_float("softmax", x->data);
  const int32_t a = normalize_axis(axis, s.ndim(), "softmax");
  if (a == 1) return softmax(x);
  const AxisSplit l = split_at_axis(s, a);
  VarPtr y = softmax(reshape(x, Shape{l.outer, l.extent, l.inner}));
  return reshape(y, s);
}

VarPtr log_softmax(const VarPtr& x, int32_t axis) {
  check_float("log_softmax", x->data);
  const int32_t a = normalize_axis(axis, x->data.ndim(), "log_softmax");
  ReducedAxes r = reduced_axes("log_softmax", x->data.shape(), &a, 1);
  return sub(x, logsumexp_kept("log_softmax", x, r));
}

}  // namespace chainerc::ops
