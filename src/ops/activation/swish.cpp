// swish: y = x sigmoid(beta x) (Chainer's F.swish), beta broadcast along
// axis 1: beta's shape is x.shape[1:1 + beta.ndim] and it is reshaped to
// (1, *beta.shape, 1, ...). A composition of reshape, mul and sigmoid, so
// differentiable in x and beta to any order (beta's gradient summed over the
// other axes by mul's backward). silu is beta = 1, fused.
#include <vector>

#include "ops/op_util.h"
#include "ops/ops.h"

namespace chainerc::ops {

VarPtr swish(const VarPtr& x, const VarPtr& beta) {
  const Array& xd = x->data;
  const Array& bd = beta->data;
  check_float_pair("swish", xd, bd);
  const Shape& xs = xd.shape();
  const Shape& bs = bd.shape();
  bool ok = bs.ndim() + 1 <= xs.ndim();
  for (int32_t i = 0; ok && i < bs.ndim(); ++i) ok = bs[i] == xs[i + 1];
  if (!ok)
    fail(CH_ERR_SHAPE, "swish: beta of shape ", bs.to_string(), " does not match x of shape ",
         xs.to_string(), " (beta's shape must be x.shape[1:1 + beta.ndim])");
  std::vector<int64_t> ext(static_cast<size_t>(xs.ndim()), 1);
  for (int32_t i = 0; i < bs.ndim(); ++i) ext[static_cast<size_t>(i) + 1] = bs[i];
  const Shape es = Shape::from_c(ext.data(), xs.ndim(), "swish");
  return mul(x, sigmoid(mul(reshape(beta, es), x)));
}

}  // namespace chainerc::ops
