// neg: y = -x.
#include "ops/op_util.h"
#include "ops/ops.h"

namespace chainerc::ops {
namespace {

class Neg final : public Function {
 public:
  const char* name() const override { return "Neg"; }
  Arrays forward(const Arrays& in) override {
    check_float("neg", in[0]);
    return {run(kernels::neg, in[0])};
  }
  Arrays backward(const Arrays&, const Arrays& gy) override { return {run(kernels::neg, gy[0])}; }
  CH_GRAPH_BACKWARD { return {neg(gy[0])}; }
};

}  // namespace

VarPtr neg(const VarPtr& x) { return apply1(std::make_shared<Neg>(), {x}); }

}  // namespace chainerc::ops
