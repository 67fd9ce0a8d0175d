// NesterovAG (Chainer 7's chainer.optimizers.NesterovAG, Sutskever's form of
// Nesterov's accelerated gradient): v = momentum * v - lr * g;
// p += momentum^2 * v - (1 + momentum) * lr * g. State "v".
#include "kernels/optimizers.h"
#include "train/optimizers/builtin.h"
#include "train/optimizers/optimizers.h"

namespace chainerc {
namespace {

class NesterovAg final : public BuiltinOptimizer {
 public:
  NesterovAg(double lr, double momentum, const char* who)
      : BuiltinOptimizer({{"lr", lr, Range::NonNegative}, {"momentum", momentum, Range::Unit}},
                         who) {}

  const char* name() const override { return "NesterovAG"; }
  const std::vector<std::string>& state_names() const override {
    static const std::vector<std::string> names{"v"};
    return names;
  }
  void update_one(OptSlot& s) override {
    kernels::nesterov_ag_update(kernels::NesterovAgHyper{hp(kLr), hp(kMomentum)}, s.param, s.grad,
                                s.state[0]);
  }

 private:
  enum { kLr, kMomentum };
};

}  // namespace

OptimizerPtr make_nesterov_ag(double lr, double momentum, const char* who) {
  return std::make_shared<NesterovAg>(lr, momentum, who);
}

}  // namespace chainerc
