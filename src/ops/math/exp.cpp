// exp: y = e ** x.
#include <cmath>

#include "ops/op_util.h"
#include "ops/ops.h"

namespace chainerc::ops {
namespace {

class Exp final : public Function {
 public:
  const char* name() const override { return "Exp"; }
  bool retains_input(size_t) const override { return false; }  // backward reads y
  Arrays forward(const Arrays& in) override {
    check_float("exp", in[0]);
    y_ = run(kernels::exp, in[0]);
    return {y_};
  }
  Arrays backward(const Arrays&, const Arrays& gy) override {  // gx = gy * y
    return {run(kernels::exp_grad, gy[0], y_)};
  }
  CH_GRAPH_BACKWARD { return {mul(gy[0], output_variable(self, 0, y_))}; }

 private:
  Array y_;  // the output's data (no reference to the output variable: no cycle)
};

}  // namespace

VarPtr exp(const VarPtr& x) { return apply1(std::make_shared<Exp>(), {x}); }

}  // namespace chainerc::ops
