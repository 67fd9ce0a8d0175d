// Adam (chainer.optimizers.Adam): at step t, with beta1_t = beta1 * lam^(t-1),
// m += (1 - beta1_t) * (g - m); v += (1 - beta2) * (g^2 - v);
// p -= lr * m / (sqrt(v) + eps), lr = alpha * sqrt(1 - beta2^t) / (1 - beta1^t)
// (the read-only hyperparameter "lr"). States "m" and "v".
#include <cmath>

#include "kernels/optimizers.h"
#include "train/optimizers/builtin.h"
#include "train/optimizers/optimizers.h"

namespace chainerc {
namespace {

class Adam final : public BuiltinOptimizer {
 public:
  Adam(double alpha, double beta1, double beta2, double lam, double eps, const char* who)
      : BuiltinOptimizer({{"alpha", alpha, Range::NonNegative},
                          {"beta1", beta1, Range::Unit},
                          {"beta2", beta2, Range::Unit},
                          {"lam", lam, Range::Lam},
                          {"eps", eps, Range::NonNegative}},
                         who, {"lr"}) {}

  const char* name() const override { return "Adam"; }
  const std::vector<std::string>& state_names() const override {
    static const std::vector<std::string> names{"m", "v"};
    return names;
  }

  double get_hyperparam(const std::string& n, const char* who) const override {
    if (n == "lr") return lr(who);
    return BuiltinOptimizer::get_hyperparam(n, who);
  }
  void set_hyperparam(const std::string& n, double value, const char* who) override {
    if (n == "lr")
      fail(CH_ERR_INVALID_ARGUMENT, who,
           ": Adam's 'lr' is derived from alpha, beta1, beta2 and t; set 'alpha'");
    BuiltinOptimizer::set_hyperparam(n, value, who);
  }

  void update_one(OptSlot& s) override {
    const double beta1_t = hp(kBeta1) * std::pow(hp(kLam), static_cast<double>(t - 1));
    kernels::adam_update(kernels::AdamHyper{lr("update"), beta1_t, hp(kBeta2), hp(kEps)}, s.param,
                         s.grad, s.state[0], s.state[1]);
  }

 private:
  enum { kAlpha, kBeta1, kBeta2, kLam, kEps };

  double lr(const char* who) const {
    if (t <= 0)
      fail(CH_ERR_INVALID_ARGUMENT, who,
           ": Adam's lr = alpha * sqrt(1 - beta2^t) / (1 - beta1^t) is undefined at t = ", t,
           " (before the first update)");
    double fix1 = 1.0 - std::pow(hp(kBeta1), static_cast<double>(t));
    double fix2 = 1.0 - std::pow(hp(kBeta2), static_cast<double>(t));
    return hp(kAlpha) * std::sqrt(fix2) / fix1;
  }
};

}  // namespace

OptimizerPtr make_adam(double alpha, double beta1, double beta2, double lam, double eps,
                       const char* who) {
  return std::make_shared<Adam>(alpha, beta1, beta2, lam, eps, who);
}

}  // namespace chainerc
