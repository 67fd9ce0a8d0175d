// sigmoid: y = 1 / (1 + exp(-x)) (Chainer's F.sigmoid); gx = gy y (1 - y).
// Keeps y for backward.
#include "kernels/activation.h"
#include "ops/op_util.h"
#include "ops/ops.h"

namespace chainerc::ops {
namespace {

class Sigmoid final : public Function {
 public:
  const char* name() const override { return "Sigmoid"; }
  bool retains_input(size_t) const override { return false; }  // backward reads y
  Arrays forward(const Arrays& in) override {
    check_float("sigmoid", in[0]);
    y_ = run(kernels::sigmoid, in[0]);
    return {y_};
  }
  Arrays backward(const Arrays&, const Arrays& gy) override {
    return {run_over_grad(kernels::sigmoid_grad, gy[0], y_)};
  }
  CH_GRAPH_BACKWARD {  // gx = gy y (1 - y)
    VarPtr y = output_variable(self, 0, y_);
    return {mul(gy[0], mul(y, rsub_scalar(y, 1.0)))};
  }

 private:
  Array y_;
};

}  // namespace

VarPtr sigmoid(const VarPtr& x) { return apply1(std::make_shared<Sigmoid>(), {x}); }

}  // namespace chainerc::ops
