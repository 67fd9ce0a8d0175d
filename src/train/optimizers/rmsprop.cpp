// RMSprop (chainer.optimizers.RMSprop): ms = alpha * ms + (1 - alpha) * g^2;
// p -= lr * g / (sqrt(ms) + eps). State "ms".
#include "kernels/optimizers.h"
#include "train/optimizers/builtin.h"
#include "train/optimizers/optimizers.h"

namespace chainerc {
namespace {

class Rmsprop final : public BuiltinOptimizer {
 public:
  Rmsprop(double lr, double alpha, double eps, const char* who)
      : BuiltinOptimizer({{"lr", lr, Range::NonNegative},
                          {"alpha", alpha, Range::Unit},
                          {"eps", eps, Range::NonNegative}},
                         who) {}

  const char* name() const override { return "RMSprop"; }
  const std::vector<std::string>& state_names() const override {
    static const std::vector<std::string> names{"ms"};
    return names;
  }
  void update_one(OptSlot& s) override {
    kernels::rmsprop_update(kernels::RmspropHyper{hp(kLr), hp(kAlpha), hp(kEps)}, s.param, s.grad,
                            s.state[0]);
  }

 private:
  enum { kLr, kAlpha, kEps };
};

}  // namespace

OptimizerPtr make_rmsprop(double lr, double alpha, double eps, const char* who) {
  return std::make_shared<Rmsprop>(lr, alpha, eps, who);
}

}  // namespace chainerc
