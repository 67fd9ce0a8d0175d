// tanh: y = tanh(x) (Chainer's F.tanh); gx = gy (1 - y^2). Keeps y for backward.
#include <cmath>

#include "ops/nn_util.h"
#include "ops/ops.h"

namespace chainerc::ops {
namespace {

class Tanh final : public Function {
 public:
  const char* name() const override { return "Tanh"; }
  bool retains_input(size_t) const override { return false; }  // backward reads y
  Arrays forward(const Arrays& in) override {
    y_ = par_vector_unary("tanh", in[0],
                          [](const auto* x, auto* y, int64_t n) { cpu::vector_tanh(x, y, n); });
    return {y_};
  }
  Arrays backward(const Arrays&, const Arrays& gy) override {
    return {
        par_binary("tanh", y_, gy[0], [](auto y, auto g) { return g * (decltype(y)(1) - y * y); })};
  }

 private:
  Array y_;
};

}  // namespace

VarPtr tanh(const VarPtr& x) { return apply1(std::make_shared<Tanh>(), {x}); }

}  // namespace chainerc::ops
