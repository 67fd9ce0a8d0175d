// add: y = a + b with broadcasting; and y = x + s for a scalar s.
#include "ops/op_util.h"
#include "ops/ops.h"

namespace chainerc::ops {
namespace {

class Add final : public Function {
 public:
  const char* name() const override { return "Add"; }
  Arrays forward(const Arrays& in) override {
    return {run_broadcast("add", kernels::add, in[0], in[1])};
  }
  Arrays backward(const Arrays& in, const Arrays& gy) override {
    return {sum_to_shape(gy[0], in[0].shape()), sum_to_shape(gy[0], in[1].shape())};
  }
  CH_GRAPH_BACKWARD {
    return {sum_to(gy[0], inputs[0]->data.shape()), sum_to(gy[0], inputs[1]->data.shape())};
  }
};

class AddScalar final : public Function {
 public:
  explicit AddScalar(double s) : s_(s) {}
  const char* name() const override { return "AddScalar"; }
  Arrays forward(const Arrays& in) override {
    check_float("add_scalar", in[0]);
    return {run(kernels::add_scalar, in[0], s_)};
  }
  Arrays backward(const Arrays&, const Arrays& gy) override { return {gy[0]}; }
  CH_GRAPH_BACKWARD { return {gy[0]}; }

 private:
  double s_;
};

}  // namespace

VarPtr add(const VarPtr& a, const VarPtr& b) { return apply1(std::make_shared<Add>(), {a, b}); }
VarPtr add_scalar(const VarPtr& x, double s) { return apply1(std::make_shared<AddScalar>(s), {x}); }

}  // namespace chainerc::ops
