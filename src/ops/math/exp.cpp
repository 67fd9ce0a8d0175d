// exp: y = e ** x.
#include <cmath>

#include "ops/nn_util.h"
#include "ops/ops.h"

namespace chainerc::ops {
namespace {

class Exp final : public Function {
 public:
  const char* name() const override { return "Exp"; }
  bool retains_input(size_t) const override { return false; }  // backward reads y
  Arrays forward(const Arrays& in) override {
    y_ = par_vector_unary("exp", in[0],
                          [](const auto* x, auto* y, int64_t n) { cpu::vector_exp(x, y, n); });
    return {y_};
  }
  Arrays backward(const Arrays&, const Arrays& gy) override {  // gx = gy * y
    return {binary_same("exp", gy[0], y_, [](auto g, auto y) { return g * y; })};
  }

 private:
  Array y_;  // the output's data (no reference to the output variable: no cycle)
};

}  // namespace

VarPtr exp(const VarPtr& x) { return apply1(std::make_shared<Exp>(), {x}); }

}  // namespace chainerc::ops
