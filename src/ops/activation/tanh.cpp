// tanh: y = tanh(x) (Chainer's F.tanh); gx = gy (1 - y^2). Keeps y for backward.
#include "kernels/activation.h"
#include "ops/op_util.h"
#include "ops/ops.h"

namespace chainerc::ops {
namespace {

class Tanh final : public Function {
 public:
  const char* name() const override { return "Tanh"; }
  bool retains_input(size_t) const override { return false; }  // backward reads y
  Arrays forward(const Arrays& in) override {
    check_float("tanh", in[0]);
    y_ = run(kernels::tanh, in[0]);
    return {y_};
  }
  Arrays backward(const Arrays&, const Arrays& gy) override {
    return {run_over_grad(kernels::tanh_grad, gy[0], y_)};
  }
  CH_GRAPH_BACKWARD {  // gx = gy (1 - y^2)
    VarPtr y = output_variable(self, 0, y_);
    return {mul(gy[0], rsub_scalar(mul(y, y), 1.0))};
  }

 private:
  Array y_;
};

}  // namespace

VarPtr tanh(const VarPtr& x) { return apply1(std::make_shared<Tanh>(), {x}); }

}  // namespace chainerc::ops
