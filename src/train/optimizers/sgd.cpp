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
    // A gradient backward left as a product (Linear's gW = gy^T x) is added
    // into the parameter as one GEMM, never written (Buffer::add_deferred_to).
    if (s.grad.buffer() && s.grad.buffer()->add_deferred_to(s.param, -hp(kLr))) return;
    kernels::sgd_update(kernels::SgdHyper{hp(kLr)}, s.param, s.grad);
  }
  // p -= lr g is linear in g: backward can add -lr g into p itself.
  bool can_step_in_backward() const override { return true; }
  double backward_step_scale() const override { return -hp(kLr); }
  void set_hyperparam(const std::string& name, double value, const char* who) override {
    BuiltinOptimizer::set_hyperparam(name, value, who);
    rearm_steps();  // a step not yet taken takes the new lr
  }

 private:
  enum { kLr };
};

}  // namespace

OptimizerPtr make_sgd(double lr, const char* who) { return std::make_shared<Sgd>(lr, who); }

}  // namespace chainerc
