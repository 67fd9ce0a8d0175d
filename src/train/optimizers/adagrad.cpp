// AdaGrad (chainer.optimizers.AdaGrad): h += g^2; p -= lr * g / (sqrt(h) + eps).
// State "h".
#include "kernels/optimizers.h"
#include "train/optimizers/builtin.h"
#include "train/optimizers/optimizers.h"

namespace chainerc {
namespace {

class AdaGrad final : public BuiltinOptimizer {
 public:
  AdaGrad(double lr, double eps, const char* who)
      : BuiltinOptimizer({{"lr", lr, Range::NonNegative}, {"eps", eps, Range::NonNegative}}, who) {}

  const char* name() const override { return "AdaGrad"; }
  const std::vector<std::string>& state_names() const override {
    static const std::vector<std::string> names{"h"};
    return names;
  }
  void update_one(OptSlot& s) override {
    kernels::adagrad_update(kernels::AdaGradHyper{hp(kLr), hp(kEps)}, s.param, s.grad, s.state[0]);
  }

 private:
  enum { kLr, kEps };
};

}  // namespace

OptimizerPtr make_adagrad(double lr, double eps, const char* who) {
  return std::make_shared<AdaGrad>(lr, eps, who);
}

}  // namespace chainerc
