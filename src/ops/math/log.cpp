// log: y = ln(x).
#include <cmath>

#include "ops/op_util.h"
#include "ops/ops.h"

namespace chainerc::ops {
namespace {

class Log final : public Function {
 public:
  const char* name() const override { return "Log"; }
  Arrays forward(const Arrays& in) override {
    check_float("log", in[0]);
    return {run(kernels::log, in[0])};
  }
  Arrays backward(const Arrays& in, const Arrays& gy) override {  // gx = gy / x
    return {run(kernels::log_grad, gy[0], in[0])};
  }
  CH_GRAPH_BACKWARD { return {div(gy[0], inputs[0])}; }
};

}  // namespace

VarPtr log(const VarPtr& x) { return apply1(std::make_shared<Log>(), {x}); }

}  // namespace chainerc::ops
