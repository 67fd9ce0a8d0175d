// The Optimizer base class (the seed's Optimizer), behind ch_optimizer: the
// parameters it updates with their state arrays, the step count, and the
// gradient utilities, which run as kernels (kernels/optimizers.h,
// kernels/math.h) on the parameters' device. The built-in update rules are
// in optimizers/ (one file each, factories in optimizers/optimizers.h); the
// user-defined optimizer of the C API is in src/capi/callback_optimizer.h.
#pragma once

#include <memory>
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
  // Updates one parameter at step t (already incremented).
  virtual void update_one(OptSlot& slot) = 0;
  // A hyperparameter by name; Error(CH_ERR_INVALID_ARGUMENT) naming the known
  // ones for an unknown name or a value out of range.
  virtual double get_hyperparam(const std::string& name, const char* who) const = 0;
  virtual void set_hyperparam(const std::string& name, double value, const char* who) = 0;

  // Replaces the parameters, makes fresh state, t = 0. Strong guarantee.
  void setup(std::vector<NamedParameter> params, const char* who);
  void update(const char* who);
  void zero_grads();
  void accumulate_grads(const Arrays& grads, const char* who);
  // The L2 norm of every gradient together; refuses a step taken in backward.
  double grads_norm(const char* who) const;
  void clip_grads(double maxnorm, const char* who);
  void weight_decay(double decay, const char* who);
  void require_setup(const char* who) const;

  // The step taken in backward (ch_optimizer_set_step_in_backward): a rule
  // that can be taken there (plain SGD's, linear in the gradient) answers
  // the scale backward multiplies a gradient by to step its parameter (-lr).
  virtual bool can_step_in_backward() const { return false; }
  virtual double backward_step_scale() const { return 0; }
  void set_step_in_backward(bool on, const char* who);
  // Gives the armed gradient buffers the current scale (a hyperparameter
  // changed after zero_grads).
  void rearm_steps();
  // Error naming the first parameter whose step backward took (its gradient
  // was never written), for what reads or changes gradients before update.
  void refuse_taken_steps(const char* who) const;

  std::vector<OptSlot> slots;
  int64_t t = 0;
  int64_t epoch = 0;  // kept for checkpoints (Chainer's Optimizer.epoch)
  bool is_setup = false;
  bool step_in_backward = false;
  // Run by ch_optimizer_update before update() (ch_optimizer_set_update_hook,
  // src/capi/optimizer_hook.cpp); opaque here.
  std::shared_ptr<void> update_hook;
};

using OptimizerPtr = std::shared_ptr<Optimizer>;

}  // namespace chainerc
