// sub: y = a - b with broadcasting; y = x - s; y = s - x.
#include "ops/op_util.h"
#include "ops/ops.h"

namespace chainerc::ops {
namespace {

class Sub final : public Function {
 public:
  const char* name() const override { return "Sub"; }
  Arrays forward(const Arrays& in) override {
    return {run_broadcast("sub", kernels::sub, in[0], in[1])};
  }
  Arrays backward(const Arrays& in, const Arrays& gy) override {
    Array neg_gy = run(kernels::neg, gy[0]);
    return {sum_to_shape(gy[0], in[0].shape()), sum_to_shape(neg_gy, in[1].shape())};
  }
  CH_GRAPH_BACKWARD {
    return {sum_to(gy[0], inputs[0]->data.shape()), sum_to(neg(gy[0]), inputs[1]->data.shape())};
  }
};

class SubScalar final : public Function {  // x - s
 public:
  explicit SubScalar(double s) : s_(s) {}
  const char* name() const override { return "SubScalar"; }
  Arrays forward(const Arrays& in) override {
    check_float("sub_scalar", in[0]);
    return {run(kernels::sub_scalar, in[0], s_)};
  }
  Arrays backward(const Arrays&, const Arrays& gy) override { return {gy[0]}; }
  CH_GRAPH_BACKWARD { return {gy[0]}; }

 private:
  double s_;
};

class RSubScalar final : public Function {  // s - x
 public:
  explicit RSubScalar(double s) : s_(s) {}
  const char* name() const override { return "RSubScalar"; }
  Arrays forward(const Arrays& in) override {
    check_float("rsub_scalar", in[0]);
    return {run(kernels::rsub_scalar, in[0], s_)};
  }
  Arrays backward(const Arrays&, const Arrays& gy) override { return {run(kernels::neg, gy[0])}; }
  CH_GRAPH_BACKWARD { return {neg(gy[0])}; }

 private:
  double s_;
};

}  // namespace

VarPtr sub(const VarPtr& a, const VarPtr& b) { return apply1(std::make_shared<Sub>(), {a, b}); }
VarPtr sub_scalar(const VarPtr& x, double s) { return apply1(std::make_shared<SubScalar>(s), {x}); }
VarPtr rsub_scalar(const VarPtr& x, double s) {
  return apply1(std::make_shared<RSubScalar>(s), {x});
}

}  // namespace chainerc::ops
