// Optimizers (the seed's Optimizer and chainer.optimizers), behind ch_optimizer.
#pragma once

#include <ch/optimizer.h>

#include <string>
#include <vector>

#include "function_set.h"

namespace chainerc {

// One parameter the optimizer updates, with its state arrays.
struct OptSlot {
  std::string path;
  Array param, grad;
  Arrays state;                   // one per state name
  std::vector<std::string> keys;  // "<path>/<state name>"
};

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  Optimizer() = default;
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  virtual const char* name() const = 0;
  virtual const std::vector<std::string>& state_names() const = 0;
  // Creates slot.state (one array per state name).
  virtual void init_state(OptSlot& slot) = 0;
  // Updates one parameter at step t_ (already incremented).
  virtual void update_one(OptSlot& slot) = 0;
  virtual double get_hyperparam(const std::string& name, const char* who) const;
  virtual void set_hyperparam(const std::string& name, double value, const char* who);

  // Replaces the parameters, makes fresh state, t = 0. Strong guarantee.
  void setup(std::vector<NamedParameter> params, const char* who);
  void update(const char* who);
  void zero_grads();
  void accumulate_grads(const Arrays& grads, const char* who);
  double grads_norm() const;
  void clip_grads(double maxnorm, const char* who);
  void weight_decay(double decay, const char* who);
  void require_setup(const char* who) const;

  std::vector<OptSlot> slots;
  int64_t t = 0;
  int64_t epoch = 0;  // kept for checkpoints (Chainer's Optimizer.epoch)
  bool is_setup = false;
  // Run by ch_optimizer_update before update() (ch_optimizer_set_update_hook,
  // src/capi/optimizer_hook.cpp); opaque here.
  std::shared_ptr<void> update_hook;
};

using OptimizerPtr = std::shared_ptr<Optimizer>;

enum class OptimizerKind { SGD, MomentumSGD, AdaGrad, AdaDelta, Adam, RMSprop };

struct Hyperparams {
  double lr = 0.01, momentum = 0.9, eps = 1e-8, rho = 0.95, alpha = 0.001, beta1 = 0.9,
         beta2 = 0.999, lam = 1 - 1e-8;
};

// A built-in optimizer; validates the hyperparameters (Error naming them).
OptimizerPtr make_builtin_optimizer(OptimizerKind kind, const Hyperparams& h, const char* who);
// A user-defined optimizer from callbacks (def validated and copied).
OptimizerPtr make_callback_optimizer(const ch_optimizer_def& def, const char* who);

}  // namespace chainerc

namespace chainerc {
// Forget the def's destroy (when creating the handle failed, the caller keeps
// ownership of user_data).
void disown_callback_optimizer(Optimizer& opt);
}  // namespace chainerc
