// SGD (chainer.optimizers.SGD): p -= lr * g.
#include "kernels/optimizers.h"
#include "train/optimizers/builtin.h"
#include "train/optimizers/optimizers.h"

namespace chainerc {
namespace {

class Sgd final : public BuiltinOptimizer {
 public:
  Sgd(double lr, const char* who) : BuiltinOptimizer({{"lr", lr, Range::NonNegative}}, who) {}

  const char* name() const override { return "SGD"; }
  const std::vector<std::string>& state_names() const override {
    static const std::vector<std::string> names;
    return names;
  }
  void update_one(OptSlot& s) override {
    kernels::sgd_update(kernels::SgdHyper{hp(kLr)}, s.param, s.grad);
  }

 private:
  enum { kLr };
};

}  // namespace

OptimizerPtr make_sgd(double lr, const char* who) { return std::make_shared<Sgd>(lr, who); }

}  // namespace chainerc
