// flip: x reversed along one axis (Chainer 7's F.flip), a strided gather with
// a negative stride; its backward is flip again (the gather's adjoint). Any
// dtype.
#include "ops/graph_ops.h"
#include "ops/op_util.h"
#include "ops/ops.h"

namespace chainerc::ops {

VarPtr flip(const VarPtr& x, int32_t axis) {
  const Shape& s = x->data.shape();
  if (s.ndim() == 0)
    fail(CH_ERR_SHAPE, "flip: x is 0-d; an array with at least one axis is expected");
  const int32_t a = normalize_axis(axis, s.ndim(), "flip");
  kernels::StridedView v;
  contiguous_strides(s, v.stride);
  if (s[a] > 0) v.offset = (s[a] - 1) * v.stride[a];
  v.stride[a] = -v.stride[a];
  return strided_gather(x, v, s, Array());
}

}  // namespace chainerc::ops
