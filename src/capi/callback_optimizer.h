// A user-defined optimizer (ch_optimizer_new): the update rule and the state
// initialisation are the caller's callbacks of a ch_optimizer_def, called with
// borrowed ch_array handles; the Optimizer base class does the rest.
#pragma once

#include <ch/optimizer.h>

#include <memory>
#include <string>
#include <vector>

#include "train/optimizer.h"

namespace chainerc::capi {

class CallbackOptimizer final : public Optimizer {
 public:
  CallbackOptimizer(const ch_optimizer_def& def, std::string name, std::vector<std::string> states);
  ~CallbackOptimizer() override;
  // Forget the def's destroy (when creating the handle failed, the caller
  // keeps ownership of user_data).
  void disown() { def_.destroy = nullptr; }

  const char* name() const override { return name_.c_str(); }
  const std::vector<std::string>& state_names() const override { return states_; }
  void init_state(OptSlot& slot) override;
  void update_one(OptSlot& slot) override;
  // A user-defined optimizer has no hyperparameters here (Error for any name).
  double get_hyperparam(const std::string& name, const char* who) const override;
  void set_hyperparam(const std::string& name, double value, const char* who) override;

 private:
  [[noreturn]] void callback_failed(const char* phase, const std::string& path, ch_status st) const;

  ch_optimizer_def def_;
  std::string name_;
  std::vector<std::string> states_;
};

// Validates and copies `def` (Error naming the bad field, prefixed by `who`).
// The optimizer calls def.destroy(def.user_data) when it is destroyed.
std::shared_ptr<CallbackOptimizer> make_callback_optimizer(const ch_optimizer_def& def,
                                                           const char* who);

}  // namespace chainerc::capi
