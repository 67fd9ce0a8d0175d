// sigmoid: y = 1 / (1 + exp(-x)) (Chainer's F.sigmoid); gx = gy y (1 - y).
// Keeps y for backward.
#include <cmath>

#include "ops/nn_util.h"
#include "ops/ops.h"

namespace chainerc::ops {
namespace {

class Sigmoid final : public Function {
 public:
  const char* name() const override { return "Sigmoid"; }
  bool retains_input(size_t) const override { return false; }  // backward reads y
  Arrays forward(const Arrays& in) override {
    y_ = par_vector_unary("sigmoid", in[0],
                          [](const auto* x, auto* y, int64_t n) { cpu::vector_sigmoid(x, y, n); });
    return {y_};
  }
  Arrays backward(const Arrays&, const Arrays& gy) override {
    return {par_binary("sigmoid", y_, gy[0],
                       [](auto y, auto g) { return g * y * (decltype(y)(1) - y); })};
  }

 private:
  Array y_;
};

}  // namespace

VarPtr sigmoid(const VarPtr& x) { return apply1(std::make_shared<Sigmoid>(), {x}); }

}  // namespace chainerc::ops
