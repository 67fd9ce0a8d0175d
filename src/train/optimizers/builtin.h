// What the built-in optimizers share: a table of named hyperparameters with
// their valid ranges, get/set by name with checks, and state arrays of zeros
// shaped like the parameter.
#pragma once

#include <string>
#include <vector>

#include "train/optimizer.h"

namespace chainerc {

class BuiltinOptimizer : public Optimizer {
 public:
  // Where a hyperparameter must lie (besides being finite).
  enum class Range {
    NonNegative,  // >= 0
    Unit,         // [0, 1)
    Lam,          // (0, 1]
  };
  struct Hyperparam {
    const char* name;
    double value;
    Range range;
  };

  double get_hyperparam(const std::string& name, const char* who) const override;
  void set_hyperparam(const std::string& name, double value, const char* who) override;
  // One array of zeros like the parameter per state name.
  void init_state(OptSlot& slot) override;

 protected:
  // Validates the values (Error naming the first bad one). `derived` lists
  // read-only hyperparameters computed by the subclass, which answers them in
  // its own get_hyperparam/set_hyperparam before calling these.
  BuiltinOptimizer(std::vector<Hyperparam> hyperparams, const char* who,
                   std::vector<std::string> derived = {});

  // The value of hyperparameter `i` (in the constructor's order).
  double hp(size_t i) const { return hyperparams_[i].value; }

 private:
  // The index of `name` in hyperparams_ (-1 for a derived one), or Error
  // listing the names this optimizer has.
  int index_of(const std::string& name, const char* who) const;

  std::vector<Hyperparam> hyperparams_;
  std::vector<std::string> derived_;
};

}  // namespace chainerc
