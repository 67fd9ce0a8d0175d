// div: y = a / b with broadcasting; y = x / s; y = s / x.
#include "ops/op_util.h"
#include "ops/ops.h"

namespace chainerc::ops {
namespace {

class Div final : public Function {
 public:
  const char* name() const override { return "Div"; }
  Arrays forward(const Arrays& in) override {
    y_ = run_broadcast("div", kernels::div, in[0], in[1]);
    return {y_};
  }
  // ga = gy / b;  gb = -gy * a / b^2 = -gy * y / b
  Arrays backward(const Arrays& in, const Arrays& gy) override {
    Array ga = run_broadcast("div", kernels::div, gy[0], in[1]);
    Array gy_y = run(kernels::exp_grad, gy[0], y_);  // gy * y
    Array gb = run_broadcast("div", kernels::div_grad_b, gy_y, in[1]);
    return {sum_to_shape(ga, in[0].shape()), sum_to_shape(gb, in[1].shape())};
  }
  CH_GRAPH_BACKWARD {  // ga = gy / b, gb = -ga * y
    const VarPtr &a = inputs[0], &b = inputs[1];
    VarPtr ga = div(gy[0], b);
    VarPtr gb = needs_input_grad(1) ? neg(mul(ga, output_variable(self, 0, y_))) : nullptr;
    return {sum_to(ga, a->data.shape()), gb ? sum_to(gb, b->data.shape()) : nullptr};
  }

 private:
  Array y_;  // the output: arrays hold no graph references, so no cycle
};

class DivScalar final : public Function {  // x / s
 public:
  explicit DivScalar(double s) : s_(s) {}
  const char* name() const override { return "DivScalar"; }
  Arrays forward(const Arrays& in) override {
    check_float("div_scalar", in[0]);
    return {run(kernels::div_scalar, in[0], s_)};
  }
  Arrays backward(const Arrays&, const Arrays& gy) override {
    return {run(kernels::div_scalar, gy[0], s_)};
  }
  CH_GRAPH_BACKWARD { return {div_scalar(gy[0], s_)}; }

 private:
  double s_;
};

class RDivScalar final : public Function {  // s / x
 public:
  explicit RDivScalar(double s) : s_(s) {}
  const char* name() const override { return "RDivScalar"; }
  Arrays forward(const Arrays& in) override {
    check_float("rdiv_scalar", in[0]);
    return {run(kernels::rdiv_scalar, in[0], s_)};
  }
  // gx = -s / x^2 * gy
  Arrays backward(const Arrays& in, const Arrays& gy) override {
    return {run(kernels::rdiv_scalar_grad, gy[0], in[0], s_)};
  }
  CH_GRAPH_BACKWARD { return {mul(gy[0], mul_scalar(pow_scalar(inputs[0], -2), -s_))}; }

 private:
  double s_;
};

}  // namespace

VarPtr div(const VarPtr& a, const VarPtr& b) { return apply1(std::make_shared<Div>(), {a, b}); }
VarPtr div_scalar(const VarPtr& x, double s) { return apply1(std::make_shared<DivScalar>(s), {x}); }
VarPtr rdiv_scalar(const VarPtr& x, double s) {
  return apply1(std::make_shared<RDivScalar>(s), {x});
}

}  // namespace chainerc::ops
