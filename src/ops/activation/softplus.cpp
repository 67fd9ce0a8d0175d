// softplus: y = log(1 + exp(beta x)) / beta (Chainer's F.softplus), computed
// without overflow; gx = gy sigmoid(beta x). Keeps x; the graph backward is
// gy sigmoid(beta x) as functions, twice differentiable. Declared in
// src/ops/manifest.py with its kernels (kernels/pointwise/activation_ext.h).
#include <cmath>

#include "kernels/generated.h"
#include "ops/op_util.h"
#include "ops/ops.h"

namespace chainerc::ops {
namespace {

class Softplus final : public Function {
 public:
  explicit Softplus(double beta) : beta_(beta) {}
  const char* name() const override { return "Softplus"; }
  Arrays forward(const Arrays& in) override {
    check_float("softplus", in[0]);
    return {run(kernels::softplus, in[0], beta_)};
  }
  Arrays backward(const Arrays& in, const Arrays& gy) override {
    return {run_over_grad(kernels::softplus_grad, gy[0], in[0], beta_)};
  }
  CH_GRAPH_BACKWARD { return {mul(gy[0], sigmoid(mul_scalar(inputs[0], beta_)))}; }

 private:
  double beta_;
};

}  // namespace

VarPtr softplus(const VarPtr& x, double beta) {
  if (beta == 0 || !std::isfinite(beta))
    fail(CH_ERR_INVALID_ARGUMENT, "softplus: beta must be nonzero and finite (beta = ", beta, ")");
  return apply1(std::make_shared<Softplus>(beta), {x});
}

}  // namespace chainerc::ops
