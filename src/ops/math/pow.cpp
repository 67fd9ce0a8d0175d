// pow: y = x ** p for a scalar exponent p; y = s ** x for a scalar base s.
#include <cmath>

#include "ops/op_util.h"
#include "ops/ops.h"

namespace chainerc::ops {
namespace {

class PowScalar final : public Function {  // x ** p
 public:
  explicit PowScalar(double p) : p_(p) {}
  const char* name() const override { return "PowScalar"; }
  Arrays forward(const Arrays& in) override {
    check_float("pow_scalar", in[0]);
    return {run(kernels::pow_scalar, in[0], p_)};
  }
  // gx = p * x^(p-1) * gy
  Arrays backward(const Arrays& in, const Arrays& gy) override {
    return {run(kernels::pow_scalar_grad, gy[0], in[0], p_)};
  }
  CH_GRAPH_BACKWARD {
    if (p_ == 0) return {mul_scalar(gy[0], 0)};
    return {
        mul(gy[0], mul_scalar(p_ == 1 ? identity(inputs[0]) : pow_scalar(inputs[0], p_ - 1), p_))};
  }

 private:
  double p_;
};

class RPowScalar final : public Function {  // s ** x
 public:
  explicit RPowScalar(double s) : s_(s) {}
  const char* name() const override { return "RPowScalar"; }
  Arrays forward(const Arrays& in) override {
    check_float("rpow_scalar", in[0]);
    y_ = run(kernels::rpow_scalar, in[0], s_);
    return {y_};
  }
  // gx = ln(s) * s^x * gy
  Arrays backward(const Arrays&, const Arrays& gy) override {
    return {run(kernels::rpow_scalar_grad, gy[0], y_, std::log(s_))};
  }
  CH_GRAPH_BACKWARD { return {mul(gy[0], mul_scalar(output_variable(self, 0, y_), std::log(s_)))}; }

 private:
  double s_;
  Array y_;
};

}  // namespace

VarPtr pow_scalar(const VarPtr& x, double p) { return apply1(std::make_shared<PowScalar>(p), {x}); }
VarPtr rpow_scalar(const VarPtr& x, double s) {
  return apply1(std::make_shared<RPowScalar>(s), {x});
}

}  // namespace chainerc::ops
