// leaky_relu: y = x where x >= 0, slope * x where x < 0 (Chainer's
// F.leaky_relu, slope 0.2 by default); gx = gy, times slope where x < 0.
#include "ops/nn_util.h"
#include "ops/ops.h"

namespace chainerc::ops {
namespace {

class LeakyReLU final : public Function {
 public:
  explicit LeakyReLU(double slope) : slope_(slope) {}
  const char* name() const override { return "LeakyReLU"; }
  Arrays forward(const Arrays& in) override {
    return {par_unary("leaky_relu", in[0], [s = slope_](auto x) {
      using T = decltype(x);
      return x < 0 ? x * static_cast<T>(s) : x;
    })};
  }
  Arrays backward(const Arrays& in, const Arrays& gy) override {
    return {par_binary("leaky_relu", in[0], gy[0], [s = slope_](auto x, auto g) {
      using T = decltype(g);
      return x < 0 ? g * static_cast<T>(s) : g;
    })};
  }

 private:
  double slope_;
};

}  // namespace

VarPtr leaky_relu(const VarPtr& x, double slope) {
  return apply1(std::make_shared<LeakyReLU>(slope), {x});
}

}  // namespace chainerc::ops
