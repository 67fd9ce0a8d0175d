// elu: y = x for x > 0, alpha (exp(x) - 1) for x <= 0 (Chainer's F.elu);
// gx = gy for x > 0, gy alpha exp(x) = gy (y + alpha) for x <= 0 (alpha at
// x = 0, as Chainer's). Keeps x and y. clipped_relu: y = min(max(0, x), z)
// (Chainer's F.clipped_relu); gx = gy where 0 < x < z (0 at both kinks, as
// Chainer's). Keeps x. Declared in src/ops/manifest.py with their kernels
// (kernels/pointwise/activation_ext.h).
#include <cmath>

#include "kernels/activation.h"
#include "kernels/generated.h"
#include "ops/math/masked.h"
#include "ops/op_util.h"
#include "ops/ops.h"

namespace chainerc::ops {
namespace {

class Elu final : public Function {
 public:
  explicit Elu(double alpha) : alpha_(alpha) {}
  const char* name() const override { return "ELU"; }
  Arrays forward(const Arrays& in) override {
    check_float("elu", in[0]);
    y_ = run(kernels::elu, in[0], alpha_);
    return {y_};
  }
  Arrays backward(const Arrays& in, const Arrays& gy) override {
    return {run_over_grad(kernels::elu_grad, gy[0], in[0], alpha_)};
  }
  // gx = gy d, d = 1 where x > 0, y + alpha elsewhere (Chainer's ELUGrad):
  // the mask a constant, y differentiable, so d' = alpha exp(x) for x <= 0.
  // y + alpha stays finite where exp(x) would overflow.
  CH_GRAPH_BACKWARD {
    const Array& x = inputs[0]->data;
    Array pos = run(kernels::relu_grad, Array::full(x.dtype(), x.shape(), 1.0, x.device()), x);
    VarPtr y = output_variable(self, 0, y_);
    VarPtr d = add(constant_variable(pos), masked(add_scalar(y, alpha_), pos, true));
    return {mul(gy[0], d)};
  }

 private:
  double alpha_;
  Array y_;
};

class ClippedRelu final : public Function {
 public:
  explicit ClippedRelu(double z) : z_(z) {}
  const char* name() const override { return "ClippedReLU"; }
  Arrays forward(const Arrays& in) override {
    check_float("clipped_relu", in[0]);
    return {run(kernels::clipped_relu, in[0], z_)};
  }
  Arrays backward(const Arrays& in, const Arrays& gy) override {
    return {run_over_grad(kernels::clipped_relu_grad, gy[0], in[0], z_)};
  }
  CH_GRAPH_BACKWARD {  // gx = gy [0 < x < z], the mask a constant
    const Array& x = inputs[0]->data;
    Array ones = Array::full(x.dtype(), x.shape(), 1.0, x.device());
    return {mul(gy[0], constant_variable(run(kernels::clipped_relu_grad, ones, x, z_)))};
  }

 private:
  double z_;
};

}  // namespace

VarPtr elu(const VarPtr& x, double alpha) {
  if (!std::isfinite(alpha))
    fail(CH_ERR_INVALID_ARGUMENT, "elu: alpha must be finite (alpha = ", alpha, ")");
  return apply1(std::make_shared<Elu>(alpha), {x});
}

VarPtr clipped_relu(const VarPtr& x, double z) {
  if (!(z > 0)) fail(CH_ERR_INVALID_ARGUMENT, "clipped_relu: z must be positive (z = ", z, ")");
  return apply1(std::make_shared<ClippedRelu>(z), {x});
}

}  // namespace chainerc::ops
