// Adam (chainer.optimizers.Adam): at step t, with beta1_t = beta1 * lam^(t-1),
// m += (1 - beta1_t) * (g - m); v += (1 - beta2) * (g^2 - v);
// p -= eta * (lr * m / (sqrt(v) + eps) + weight_decay_rate * p), with
// lr = alpha * sqrt(1 - beta2^t) / (1 - beta1^t) (the read-only hyperparameter
// "lr"). States "m" and "v"; with amsgrad (Chainer 7) also "vhat", the running
// maximum of v, which then divides the step instead of v. The seed's Adam is
// eta = 1, weight_decay_rate = 0, amsgrad off; Chainer 7's is lam = 1.
#include <cmath>

#include "kernels/optimizers.h"
#include "train/optimizers/builtin.h"
#include "train/optimizers/optimizers.h"

namespace chainerc {
namespace {

class Adam final : public BuiltinOptimizer {
 public:
  Adam(const AdamConfig& c, const char* who)
      : BuiltinOptimizer({{"alpha", c.alpha, Range::NonNegative},
                          {"beta1", c.beta1, Range::Unit},
                          {"beta2", c.beta2, Range::Unit},
                          {"lam", c.lam, Range::Lam},
                          {"eps", c.eps, Range::NonNegative},
                          {"eta", c.eta, Range::NonNegative},
                          {"weight_decay_rate", c.weight_decay_rate, Range::NonNegative}},
                         who, {"lr", "amsgrad"}),
        amsgrad_(c.amsgrad) {}

  const char* name() const override { return "Adam"; }
  const std::vector<std::string>& state_names() const override {
    static const std::vector<std::string> names{"m", "v"};
    static const std::vector<std::string> amsgrad_names{"m", "v", "vhat"};
    return amsgrad_ ? amsgrad_names : names;
  }

  double get_hyperparam(const std::string& n, const char* who) const override {
    if (n == "lr") return lr(who);
    if (n == "amsgrad") return amsgrad_ ? 1.0 : 0.0;
    return BuiltinOptimizer::get_hyperparam(n, who);
  }
  void set_hyperparam(const std::string& n, double value, const char* who) override {
    if (n == "lr")
      fail(CH_ERR_INVALID_ARGUMENT, who,
           ": Adam's 'lr' is derived from alpha, beta1, beta2 and t; set 'alpha'");
    if (n == "amsgrad")
      fail(CH_ERR_INVALID_ARGUMENT, who,
           ": Adam's 'amsgrad' is fixed when the optimizer is made (it decides the state arrays)");
    BuiltinOptimizer::set_hyperparam(n, value, who);
  }

  void update_one(OptSlot& s) override {
    const double beta1_t = hp(kBeta1) * std::pow(hp(kLam), static_cast<double>(t - 1));
    const double step = lr("update");
    if (amsgrad_) {
      kernels::amsgrad_update(
          kernels::AdamWHyper{step, beta1_t, hp(kBeta2), hp(kEps), hp(kEta), hp(kWeightDecay)},
          s.param, s.grad, s.state[0], s.state[1], s.state[2]);
    } else if (hp(kEta) == 1.0 && hp(kWeightDecay) == 0.0) {
      // The seed's rule, element for element as before the Chainer 7 terms.
      kernels::adam_update(kernels::AdamHyper{step, beta1_t, hp(kBeta2), hp(kEps)}, s.param, s.grad,
                           s.state[0], s.state[1]);
    } else {
      kernels::adamw_update(
          kernels::AdamWHyper{step, beta1_t, hp(kBeta2), hp(kEps), hp(kEta), hp(kWeightDecay)},
          s.param, s.grad, s.state[0], s.state[1]);
    }
  }

 private:
  enum { kAlpha, kBeta1, kBeta2, kLam, kEps, kEta, kWeightDecay };

  double lr(const char* who) const {
    if (t <= 0)
      fail(CH_ERR_INVALID_ARGUMENT, who,
           ": Adam's lr = alpha * sqrt(1 - beta2^t) / (1 - beta1^t) is undefined at t = ", t,
           " (before the first update)");
    double fix1 = 1.0 - std::pow(hp(kBeta1), static_cast<double>(t));
    double fix2 = 1.0 - std::pow(hp(kBeta2), static_cast<double>(t));
    return hp(kAlpha) * std::sqrt(fix2) / fix1;
  }

  const bool amsgrad_;
};

}  // namespace

OptimizerPtr make_adam(double alpha, double beta1, double beta2, double lam, double eps,
                       const char* who) {
  AdamConfig c;
  c.alpha = alpha;
  c.beta1 = beta1;
  c.beta2 = beta2;
  c.lam = lam;
  c.eps = eps;
  return make_adam(c, who);
}

OptimizerPtr make_adam(const AdamConfig& config, const char* who) {
  return std::make_shared<Adam>(config, who);
}

}  // namespace chainerc
