// gelu: y = x Phi(x) (PyTorch's exact gelu), gelu_tanh: PyTorch's
// approximate='tanh', silu: y = x sigmoid(x) (PyTorch's silu). Each keeps x;
// the array backward is one fused kernel, the graph backward the derivative
// written with differentiable functions (erf, exp, tanh, sigmoid), so each is
// twice differentiable. Declared in src/ops/manifest.py with their kernels
// (kernels/pointwise/activation_ext.h).
#include "kernels/generated.h"
#include "ops/op_util.h"
#include "ops/ops.h"

namespace chainerc::ops {
namespace {

constexpr double kSqrtHalf = 0.70710678118654752;     // 1 / sqrt(2)
constexpr double kInvSqrt2Pi = 0.39894228040143268;   // 1 / sqrt(2 pi)
constexpr double kSqrt2OverPi = 0.79788456080286536;  // sqrt(2 / pi)
constexpr double kCubic = 0.044715;

class Gelu final : public Function {
 public:
  const char* name() const override { return "GELU"; }
  Arrays forward(const Arrays& in) override {
    check_float("gelu", in[0]);
    return {run(kernels::gelu, in[0])};
  }
  Arrays backward(const Arrays& in, const Arrays& gy) override {
    return {run_over_grad(kernels::gelu_grad, gy[0], in[0])};
  }
  CH_GRAPH_BACKWARD {  // gx = gy (Phi(x) + x phi(x))
    const VarPtr& x = inputs[0];
    VarPtr cdf = mul_scalar(add_scalar(erf(mul_scalar(x, kSqrtHalf)), 1.0), 0.5);
    VarPtr pdf = mul_scalar(exp(mul_scalar(square(x), -0.5)), kInvSqrt2Pi);
    return {mul(gy[0], add(cdf, mul(x, pdf)))};
  }
};

class GeluTanh final : public Function {
 public:
  const char* name() const override { return "GELUTanh"; }
  Arrays forward(const Arrays& in) override {
    check_float("gelu_tanh", in[0]);
    return {run(kernels::gelu_tanh, in[0])};
  }
  Arrays backward(const Arrays& in, const Arrays& gy) override {
    return {run_over_grad(kernels::gelu_tanh_grad, gy[0], in[0])};
  }
  CH_GRAPH_BACKWARD {  // gx = gy ((1 + t) / 2 + x (1 - t^2) u' / 2), t = tanh(u)
    const VarPtr& x = inputs[0];
    VarPtr x2 = square(x);
    VarPtr t = tanh(mul_scalar(add(x, mul_scalar(mul(x, x2), kCubic)), kSqrt2OverPi));
    VarPtr du = mul_scalar(add_scalar(mul_scalar(x2, 3 * kCubic), 1.0), kSqrt2OverPi);
    VarPtr d = add(mul_scalar(add_scalar(t, 1.0), 0.5),
                   mul(mul_scalar(x, 0.5), mul(rsub_scalar(square(t), 1.0), du)));
    return {mul(gy[0], d)};
  }
};

class Silu final : public Function {
 public:
  const char* name() const override { return "SiLU"; }
  Arrays forward(const Arrays& in) override {
    check_float("silu", in[0]);
    return {run(kernels::silu, in[0])};
  }
  Arrays backward(const Arrays& in, const Arrays& gy) override {
    return {run_over_grad(kernels::silu_grad, gy[0], in[0])};
  }
  CH_GRAPH_BACKWARD {  // gx = gy s (1 + x (1 - s)), s = sigmoid(x)
    const VarPtr& x = inputs[0];
    VarPtr s = sigmoid(x);
    return {mul(gy[0], mul(s, add_scalar(mul(x, rsub_scalar(s, 1.0)), 1.0)))};
  }
};

}  // namespace

VarPtr gelu(const VarPtr& x) { return apply1(std::make_shared<Gelu>(), {x}); }
VarPtr gelu_tanh(const VarPtr& x) { return apply1(std::make_shared<GeluTanh>(), {x}); }
VarPtr silu(const VarPtr& x) { return apply1(std::make_shared<Silu>(), {x}); }

}  // namespace chainerc::ops
