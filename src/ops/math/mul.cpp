// mul: y = a * b with broadcasting; y = x * s.
#include "ops/op_util.h"
#include "ops/ops.h"

namespace chainerc::ops {
namespace {

class Mul final : public Function {
 public:
  const char* name() const override { return "Mul"; }
  Arrays forward(const Arrays& in) override {
    return {run_broadcast("mul", kernels::mul, in[0], in[1])};
  }
  Arrays backward(const Arrays& in, const Arrays& gy) override {
    return {sum_to_shape(run_broadcast("mul", kernels::mul, gy[0], in[1]), in[0].shape()),
            sum_to_shape(run_broadcast("mul", kernels::mul, gy[0], in[0]), in[1].shape())};
  }
  CH_GRAPH_BACKWARD {
    const VarPtr &a = inputs[0], &b = inputs[1];
    return {needs_input_grad(0) ? sum_to(mul(gy[0], b), a->data.shape()) : nullptr,
            needs_input_grad(1) ? sum_to(mul(gy[0], a), b->data.shape()) : nullptr};
  }
};

class MulScalar final : public Function {
 public:
  explicit MulScalar(double s) : s_(s) {}
  const char* name() const override { return "MulScalar"; }
  Arrays forward(const Arrays& in) override {
    check_float("mul_scalar", in[0]);
    return {run(kernels::mul_scalar, in[0], s_)};
  }
  Arrays backward(const Arrays&, const Arrays& gy) override {
    return {run(kernels::mul_scalar, gy[0], s_)};
  }
  CH_GRAPH_BACKWARD { return {mul_scalar(gy[0], s_)}; }

 private:
  double s_;
};

}  // namespace

VarPtr mul(const VarPtr& a, const VarPtr& b) { return apply1(std::make_shared<Mul>(), {a, b}); }
VarPtr mul_scalar(const VarPtr& x, double s) { return apply1(std::make_shared<MulScalar>(s), {x}); }

}  // namespace chainerc::ops
