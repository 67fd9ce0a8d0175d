// MomentumSGD (chainer.optimizers.MomentumSGD): v = momentum * v - lr * g;
// p += v. State "v".
#include "kernels/optimizers.h"
#include "train/optimizers/builtin.h"
#include "train/optimizers/optimizers.h"

namespace chainerc {
namespace {

class MomentumSgd final : public BuiltinOptimizer {
 public:
  MomentumSgd(double lr, double momentum, const char* who)
      : BuiltinOptimizer({{"lr", lr, Range::NonNegative}, {"momentum", momentum, Range::Unit}},
                         who) {}

  const char* name() const override { return "MomentumSGD"; }
  const std::vector<std::string>& state_names() const override {
    static const std::vector<std::string> names{"v"};
    return names;
  }
  void update_one(OptSlot& s) override {
    kernels::momentum_sgd_update(kernels::MomentumSgdHyper{hp(kLr), hp(kMomentum)}, s.param, s.grad,
                                 s.state[0]);
  }

 private:
  enum { kLr, kMomentum };
};

}  // namespace

OptimizerPtr make_momentum_sgd(double lr, double momentum, const char* who) {
  return std::make_shared<MomentumSgd>(lr, momentum, who);
}

}  // namespace chainerc
