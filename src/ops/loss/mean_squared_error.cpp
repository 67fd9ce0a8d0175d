// mean_squared_error: sum((x0 - x1)^2) / size (Chainer's
// F.mean_squared_error: the mean over all elements, not scaled by 1/2). The
// output is a 0-d array of the inputs' dtype. Keeps d = x0 - x1 for backward:
// gx0 = 2 d gloss / size, gx1 = -gx0.
#include "kernels/loss.h"
#include "ops/op_util.h"
#include "ops/ops.h"

namespace chainerc::ops {
namespace {

class MeanSquaredError final : public Function {
 public:
  const char* name() const override { return "MeanSquaredError"; }
  Arrays forward(const Arrays& in) override {
    const Array &a = in[0], &b = in[1];
    check_float_pair("mean_squared_error", a, b);
    if (a.shape() != b.shape())
      fail(CH_ERR_SHAPE, "mean_squared_error: x0 has shape ", a.shape().to_string(),
           " but x1 has shape ", b.shape().to_string(), "; the shapes must be equal");
    diff_ = Array::empty_like(a);
    Array loss = Array::empty(a.dtype(), Shape{}, a.device());
    kernels::mean_squared_error(a, b, diff_, loss);
    return {loss};
  }
  Arrays backward(const Arrays&, const Arrays& gy) override {
    Array g0 = Array::empty_like(diff_), g1 = Array::empty_like(diff_);
    kernels::mean_squared_error_grad(diff_, gy[0], g0, g1);
    return {g0, g1};
  }
  CH_GRAPH_BACKWARD {  // g0 = 2 (x0 - x1) gy / n, g1 = -g0
    const VarPtr &a = inputs[0], &b = inputs[1];
    const double n = static_cast<double>(a->data.size());
    VarPtr g0 = mul(broadcast_to(gy[0], a->data.shape()), mul_scalar(sub(a, b), 2.0 / n));
    return {g0, neg(g0)};
  }

 private:
  Array diff_;
};

}  // namespace

VarPtr mean_squared_error(const VarPtr& x0, const VarPtr& x1) {
  return apply1(std::make_shared<MeanSquaredError>(), {x0, x1});
}

}  // namespace chainerc::ops
