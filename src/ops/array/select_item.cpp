// select_item (Chainer 7's F.select_item): y[i] = x[i, t[i]] for x (B, N)
// and int32 labels t (B,), a strided gather through t; its backward is the
// scatter-add into zeros (and that one's the gather). Any dtype of x.
#include "ops/graph_ops.h"
#include "ops/op_util.h"
#include "ops/ops.h"

namespace chainerc::ops {

VarPtr select_item(const VarPtr& x, const VarPtr& t) {
  const Shape& xs = x->data.shape();
  const Array& ta = t->data;
  if (xs.ndim() != 2)
    fail(CH_ERR_SHAPE, "select_item: x has shape ", xs.to_string(), "; a 2-d (B, N) x is expected");
  if (ta.dtype() != DType::Int32)
    fail(CH_ERR_DTYPE, "select_item: t is a ", ta.describe(), "; int32 expected");
  if (ta.ndim() != 1 || ta.shape()[0] != xs[0])
    fail(CH_ERR_SHAPE, "select_item: t has shape ", ta.shape().to_string(), " and x has shape ",
         xs.to_string(), "; t of shape (", xs[0], ",) expected");
  if (ta.device() != x->data.device())
    fail(CH_ERR_DEVICE, "select_item: t is on ", ta.device().to_string(), " but x is on ",
         x->data.device().to_string());
  const Array host = ta.device() == Device{} ? ta : ta.to_device(Device{});
  for (int64_t i = 0; i < host.size(); ++i) {
    const auto ti = static_cast<int64_t>(host.get(i));  // int32: exact in a double
    if (ti < 0 || ti >= xs[1])
      fail(CH_ERR_INVALID_ARGUMENT, "select_item: t[", i, "] = ", ti, " is out of range [0, ",
           xs[1], ")");
  }
  kernels::StridedView v;
  v.stride[0] = xs[1];
  v.index_stride[0] = 1;
  v.index_scale = 1;
  v.index_extent = xs[1];
  return strided_gather(x, v, Shape{xs[0]}, ta);
}

}  // namespace chainerc::ops
