// log: y = ln(x).
#include <cmath>

#include "ops/nn_util.h"
#include "ops/ops.h"

namespace chainerc::ops {
namespace {

class Log final : public Function {
 public:
  const char* name() const override { return "Log"; }
  Arrays forward(const Arrays& in) override {
    return {par_vector_unary("log", in[0],
                             [](const auto* x, auto* y, int64_t n) { cpu::vector_log(x, y, n); })};
  }
  Arrays backward(const Arrays& in, const Arrays& gy) override {  // gx = gy / x
    return {binary_same("log", gy[0], in[0], [](auto g, auto x) { return g / x; })};
  }
};

}  // namespace

VarPtr log(const VarPtr& x) { return apply1(std::make_shared<Log>(), {x}); }

}  // namespace chainerc::ops
