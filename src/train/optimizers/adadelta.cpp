// AdaDelta (chainer.optimizers.AdaDelta): msg = rho * msg + (1 - rho) * g^2;
// dx = sqrt((msdx + eps) / (msg + eps)) * g; msdx = rho * msdx + (1 - rho) * dx^2;
// p -= dx. States "msg" and "msdx".
#include "kernels/optimizers.h"
#include "train/optimizers/builtin.h"
#include "train/optimizers/optimizers.h"

namespace chainerc {
namespace {

class AdaDelta final : public BuiltinOptimizer {
 public:
  AdaDelta(double rho, double eps, const char* who)
      : BuiltinOptimizer({{"rho", rho, Range::Unit}, {"eps", eps, Range::NonNegative}}, who) {}

  const char* name() const override { return "AdaDelta"; }
  const std::vector<std::string>& state_names() const override {
    static const std::vector<std::string> names{"msg", "msdx"};
    return names;
  }
  void update_one(OptSlot& s) override {
    kernels::adadelta_update(kernels::AdaDeltaHyper{hp(kRho), hp(kEps)}, s.param, s.grad,
                             s.state[0], s.state[1]);
  }

 private:
  enum { kRho, kEps };
};

}  // namespace

OptimizerPtr make_adadelta(double rho, double eps, const char* who) {
  return std::make_shared<AdaDelta>(rho, eps, who);
}

}  // namespace chainerc
