// accuracy: the fraction of rows of y (N, C) whose first maximum is at the
// label t[i] (Chainer's F.accuracy; an input (N, ...) is viewed as (N, C)).
// int32 labels t (N,) in [0, C). The output is a 0-d array of y's dtype.
// Not differentiable: backward gives no gradients.
#include "kernels/evaluation.h"
#include "kernels/loss.h"
#include "ops/label_check.h"
#include "ops/op_util.h"
#include "ops/ops.h"

namespace chainerc::ops {
namespace {

class Accuracy final : public Function {
 public:
  const char* name() const override { return "Accuracy"; }
  Arrays forward(const Arrays& in) override {
    const Array &y = in[0], &t = in[1];
    check_float("accuracy", y);
    if (t.device() != y.device())
      fail(CH_ERR_DEVICE, "accuracy: y is on ", y.device().to_string(), " but t is on ",
           t.device().to_string());
    if (y.ndim() < 2)
      fail(CH_ERR_SHAPE, "accuracy: y has shape ", y.shape().to_string(), "; (N, C) is expected");
    if (t.dtype() != DType::Int32)
      fail(CH_ERR_DTYPE, "accuracy: t is a ", t.describe(), "; int32 labels are expected");
    const int64_t n = y.shape()[0];
    if (t.ndim() != 1 || t.shape()[0] != n)
      fail(CH_ERR_SHAPE, "accuracy: t has shape ", t.shape().to_string(), " but y has shape ",
           y.shape().to_string(), "; t must have shape (", n, ",)");
    const int64_t c = n ? y.size() / n : 0;
    check_labels("accuracy", t, c);
    Array out = Array::empty(y.dtype(), Shape{}, y.device());
    kernels::accuracy(y, t, out);
    return {out};
  }
  Arrays backward(const Arrays&, const Arrays&) override { return {Array(), Array()}; }
};

}  // namespace

VarPtr accuracy(const VarPtr& y, const VarPtr& t) {
  return apply1(std::make_shared<Accuracy>(), {y, t});
}

}  // namespace chainerc::ops
