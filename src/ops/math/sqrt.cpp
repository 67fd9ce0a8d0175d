// sqrt: y = sqrt(x) (Chainer's F.sqrt), gx = gy / (2 y); rsqrt: y = 1 / sqrt(x)
// (Chainer's F.rsqrt), gx = -gy y^3 / 2. Both keep y. Declared in
// src/ops/manifest.py with their kernels (kernels/pointwise/math_ext.h).
#include "kernels/generated.h"
#include "ops/op_util.h"
#include "ops/ops.h"

namespace chainerc::ops {
namespace {

class Sqrt final : public Function {
 public:
  const char* name() const override { return "Sqrt"; }
  bool retains_input(size_t) const override { return false; }  // backward reads y
  Arrays forward(const Arrays& in) override {
    check_float("sqrt", in[0]);
    y_ = run(kernels::sqrt, in[0]);
    return {y_};
  }
  Arrays backward(const Arrays&, const Arrays& gy) override {
    return {run_over_grad(kernels::sqrt_grad, gy[0], y_)};
  }
  CH_GRAPH_BACKWARD {  // gx = gy / (2 y), y differentiable (d2y/dx2 = -1 / (4 y^3))
    VarPtr y = output_variable(self, 0, y_);
    return {div(gy[0], mul_scalar(y, 2.0))};
  }

 private:
  Array y_;
};

class Rsqrt final : public Function {
 public:
  const char* name() const override { return "Rsqrt"; }
  bool retains_input(size_t) const override { return false; }  // backward reads y
  Arrays forward(const Arrays& in) override {
    check_float("rsqrt", in[0]);
    y_ = run(kernels::rsqrt, in[0]);
    return {y_};
  }
  Arrays backward(const Arrays&, const Arrays& gy) override {
    return {run_over_grad(kernels::rsqrt_grad, gy[0], y_)};
  }
  CH_GRAPH_BACKWARD {  // gx = gy (-y^3 / 2)
    VarPtr y = output_variable(self, 0, y_);
    return {mul(gy[0], mul_scalar(mul(y, square(y)), -0.5))};
  }

 private:
  Array y_;
};

}  // namespace

VarPtr sqrt(const VarPtr& x) { return apply1(std::make_shared<Sqrt>(), {x}); }
VarPtr rsqrt(const VarPtr& x) { return apply1(std::make_shared<Rsqrt>(), {x}); }

}  // namespace chainerc::ops
