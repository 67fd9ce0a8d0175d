// absolute: y = |x| (Chainer's F.absolute); gx = sign(x) gy, 0 at x = 0 (as
// Chainer's numpy.sign). erf: y = erf(x) (Chainer's F.erf);
// gx = 2 / sqrt(pi) exp(-x^2) gy. Both keep x. Declared in
// src/ops/manifest.py with their kernels (kernels/pointwise/math_ext.h).
#include "kernels/generated.h"
#include "ops/op_util.h"
#include "ops/ops.h"

namespace chainerc::ops {
namespace {

class Absolute final : public Function {
 public:
  const char* name() const override { return "Absolute"; }
  Arrays forward(const Arrays& in) override {
    check_float("absolute", in[0]);
    return {run(kernels::absolute, in[0])};
  }
  Arrays backward(const Arrays& in, const Arrays& gy) override {
    return {run_over_grad(kernels::absolute_grad, gy[0], in[0])};
  }
  CH_GRAPH_BACKWARD {  // gx = gy sign(x), the sign a constant (|x|'' = 0 off 0)
    const Array& x = inputs[0]->data;
    Array ones = Array::full(x.dtype(), x.shape(), 1.0, x.device());
    return {mul(gy[0], constant_variable(run(kernels::absolute_grad, ones, x)))};
  }
};

class Erf final : public Function {
 public:
  const char* name() const override { return "Erf"; }
  Arrays forward(const Arrays& in) override {
    check_float("erf", in[0]);
    return {run(kernels::erf, in[0])};
  }
  Arrays backward(const Arrays& in, const Arrays& gy) override {
    return {run_over_grad(kernels::erf_grad, gy[0], in[0])};
  }
  CH_GRAPH_BACKWARD {  // gx = gy 2 / sqrt(pi) exp(-x^2)
    return {mul(gy[0], mul_scalar(exp(neg(square(inputs[0]))), 1.1283791670955126))};
  }
};

}  // namespace

VarPtr absolute(const VarPtr& x) { return apply1(std::make_shared<Absolute>(), {x}); }
VarPtr erf(const VarPtr& x) { return apply1(std::make_shared<Erf>(), {x}); }

}  // namespace chainerc::ops
