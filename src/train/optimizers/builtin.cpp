#include "builtin.h"

#include <cmath>

namespace chainerc {

namespace {

void validate(const BuiltinOptimizer::Hyperparam& h, double v, const char* who) {
  using Range = BuiltinOptimizer::Range;
  if (!std::isfinite(v))
    fail(CH_ERR_INVALID_ARGUMENT, who, ": ", h.name, " is ", v, "; it must be finite");
  switch (h.range) {
    case Range::Unit:
      if (!(v >= 0 && v < 1))
        fail(CH_ERR_INVALID_ARGUMENT, who, ": ", h.name, " is ", v, "; it must be in [0, 1)");
      break;
    case Range::Lam:
      if (!(v > 0 && v <= 1))
        fail(CH_ERR_INVALID_ARGUMENT, who, ": ", h.name, " is ", v, "; it must be in (0, 1]");
      break;
    case Range::NonNegative:
      if (v < 0) fail(CH_ERR_INVALID_ARGUMENT, who, ": ", h.name, " is ", v, "; it must be >= 0");
      break;
  }
}

}  // namespace

BuiltinOptimizer::BuiltinOptimizer(std::vector<Hyperparam> hyperparams, const char* who,
                                   std::vector<std::string> derived)
    : hyperparams_(std::move(hyperparams)), derived_(std::move(derived)) {
  for (const Hyperparam& h : hyperparams_) validate(h, h.value, who);
}

int BuiltinOptimizer::index_of(const std::string& name, const char* who) const {
  for (size_t i = 0; i < hyperparams_.size(); ++i)
    if (name == hyperparams_[i].name) return static_cast<int>(i);
  for (const std::string& d : derived_)
    if (name == d) return -1;
  std::string list;
  for (const Hyperparam& h : hyperparams_) list += (list.empty() ? "" : ", ") + std::string(h.name);
  for (const std::string& d : derived_) list += (list.empty() ? "" : ", ") + d;
  fail(CH_ERR_INVALID_ARGUMENT, who, ": optimizer '", this->name(), "' has no hyperparameter '",
       name, "' (it has ", list, ")");
}

double BuiltinOptimizer::get_hyperparam(const std::string& name, const char* who) const {
  int i = index_of(name, who);
  if (i < 0)
    fail(CH_ERR_INTERNAL, who, ": optimizer '", this->name(), "' does not compute '", name, "'");
  return hyperparams_[static_cast<size_t>(i)].value;
}

void BuiltinOptimizer::set_hyperparam(const std::string& name, double value, const char* who) {
  int i = index_of(name, who);
  if (i < 0)
    fail(CH_ERR_INVALID_ARGUMENT, who, ": optimizer '", this->name(), "' hyperparameter '", name,
         "' is derived from the others and cannot be set");
  Hyperparam& h = hyperparams_[static_cast<size_t>(i)];
  validate(h, value, who);
  h.value = value;
}

void BuiltinOptimizer::init_state(OptSlot& slot) {
  slot.state.clear();
  for (size_t i = 0; i < state_names().size(); ++i)
    slot.state.push_back(Array::zeros_like(slot.param));
}

}  // namespace chainerc
