// leaky_relu: y = x where x >= 0, slope * x where x < 0 (Chainer's
// F.leaky_relu, slope 0.2 by default); gx = gy, times slope where x < 0.
#include "kernels/activation.h"
#include "ops/op_util.h"
#include "ops/ops.h"

namespace chainerc::ops {
namespace {

class LeakyReLU final : public Function {
 public:
  explicit LeakyReLU(double slope) : slope_(slope) {}
  const char* name() const override { return "LeakyReLU"; }
  Arrays forward(const Arrays& in) override {
    check_float("leaky_relu", in[0]);
    return {run(kernels::leaky_relu, in[0], slope_)};
  }
  Arrays backward(const Arrays& in, const Arrays& gy) override {
    return {run_over_grad(kernels::leaky_relu_grad, gy[0], in[0], slope_)};
  }
  CH_GRAPH_BACKWARD {  // gx = gy (x > 0 ? 1 : slope), the factor a constant
    const Array& x = inputs[0]->data;
    Array ones = Array::full(x.dtype(), x.shape(), 1.0, x.device());
    return {mul(gy[0], constant_variable(run(kernels::leaky_relu_grad, ones, x, slope_)))};
  }

 private:
  double slope_;
};

}  // namespace

VarPtr leaky_relu(const VarPtr& x, double slope) {
  return apply1(std::make_shared<LeakyReLU>(slope), {x});
}

}  // namespace chainerc::ops
