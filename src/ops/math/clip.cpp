// clip: y = min(max(x, x_min), x_max) (Chainer's F.clip; a NaN stays NaN);
// gx = gy where x_min <= x <= x_max (1 at the bounds, as Chainer's ClipGrad),
// else 0. Keeps x. A bound of -inf / +inf is Chainer's None. Declared in
// src/ops/manifest.py with its kernels (kernels/pointwise/math_ext.h).
#include <cmath>

#include "kernels/generated.h"
#include "ops/op_util.h"
#include "ops/ops.h"

namespace chainerc::ops {
namespace {

class Clip final : public Function {
 public:
  Clip(double lo, double hi) : lo_(lo), hi_(hi) {}
  const char* name() const override { return "Clip"; }
  Arrays forward(const Arrays& in) override {
    check_float("clip", in[0]);
    return {run(kernels::clip_upper, run(kernels::clip_lower, in[0], lo_), hi_)};
  }
  Arrays backward(const Arrays& in, const Arrays& gy) override {
    Array g = run_over_grad(kernels::clip_grad_lower, gy[0], in[0], lo_);
    return {run_over_grad(kernels::clip_grad_upper, g, in[0], hi_)};
  }
  CH_GRAPH_BACKWARD {  // gx = gy [x_min <= x <= x_max], the mask a constant
    const Array& x = inputs[0]->data;
    Array ones = Array::full(x.dtype(), x.shape(), 1.0, x.device());
    Array mask = run(kernels::clip_grad_upper, run(kernels::clip_grad_lower, ones, x, lo_), x, hi_);
    return {mul(gy[0], constant_variable(mask))};
  }

 private:
  double lo_, hi_;
};

}  // namespace

VarPtr clip(const VarPtr& x, double x_min, double x_max) {
  if (!(x_min < x_max))  // NaN bounds fail too
    fail(CH_ERR_INVALID_ARGUMENT, "clip: x_min must be less than x_max (x_min = ", x_min,
         ", x_max = ", x_max, ")");
  return apply1(std::make_shared<Clip>(x_min, x_max), {x});
}

}  // namespace chainerc::ops
