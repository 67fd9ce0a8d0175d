// square: y = x * x (Chainer's F.square); gx = 2 x gy. Declared in
// src/ops/manifest.py, with its kernels (square, square_grad).
#include "kernels/generated.h"
#include "ops/op_util.h"
#include "ops/ops.h"

namespace chainerc::ops {
namespace {

class Square final : public Function {
 public:
  const char* name() const override { return "Square"; }
  Arrays forward(const Arrays& in) override {
    check_float("square", in[0]);
    return {run(kernels::square, in[0])};
  }
  Arrays backward(const Arrays& in, const Arrays& gy) override {  // gx = 2 x gy
    return {run(kernels::square_grad, gy[0], in[0])};
  }
  // 2 x gy from differentiable functions: twice differentiable (d2y/dx2 = 2).
  CH_GRAPH_BACKWARD { return {mul(gy[0], mul_scalar(inputs[0], 2.0))}; }
};

}  // namespace

VarPtr square(const VarPtr& x) { return apply1(std::make_shared<Square>(), {x}); }

}  // namespace chainerc::ops
