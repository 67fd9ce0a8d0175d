#include "callback_optimizer.h"

#include <set>

#include "capi/callback_function.h"
#include "capi/error_state.h"
#include "capi/handles.h"

namespace chainerc::capi {

CallbackOptimizer::CallbackOptimizer(const ch_optimizer_def& def, std::string name,
                                     std::vector<std::string> states)
    : def_(def), name_(std::move(name)), states_(std::move(states)) {
  def_.name = nullptr;
  def_.state_names = nullptr;
}

CallbackOptimizer::~CallbackOptimizer() {
  if (def_.destroy) def_.destroy(def_.user_data);
}

double CallbackOptimizer::get_hyperparam(const std::string& name, const char* who) const {
  fail(CH_ERR_INVALID_ARGUMENT, who, ": optimizer '", this->name(), "' has no hyperparameter '",
       name, "' (a user-defined optimizer keeps its hyperparameters in its user data)");
}

void CallbackOptimizer::set_hyperparam(const std::string& name, double, const char* who) {
  get_hyperparam(name, who);
}

void CallbackOptimizer::callback_failed(const char* phase, const std::string& path,
                                        ch_status st) const {
  raise_callback_failure_of("optimizer '" + name_ + "'",
                            std::string(phase) + " for parameter '" + path + "'", st);
}

void CallbackOptimizer::init_state(OptSlot& slot) {
  const size_t n = states_.size();
  slot.state.clear();
  if (!def_.init_state) {
    for (size_t i = 0; i < n; ++i) slot.state.push_back(Array::zeros_like(slot.param));
    return;
  }
  std::vector<ch_array*> out(n, nullptr);
  ch_status st;
  CallbackErrorScope errors;  // the caller's last error survives a callback that succeeds
  {
    BorrowedArrays args({slot.param, slot.grad});
    st = def_.init_state(def_.user_data, args.handles()[0], args.handles()[1], out.data(), n);
  }
  // Take the references the callback handed over, whatever happens next.
  Arrays taken(n);
  std::vector<bool> valid(n, false);
  for (size_t i = 0; i < n; ++i) {
    if (!out[i]) continue;
    if (const std::shared_ptr<void>* obj = handle_find(out[i], HandleKind::Array)) {
      taken[i] = *static_cast<const Array*>(obj->get());
      valid[i] = true;
      try {
        handle_release(out[i], HandleKind::Array, "init_state");
      } catch (...) {
      }
    }
  }
  if (st != CH_OK) {
    errors.keep_callback_error();
    callback_failed("init_state", slot.path, st);
  }
  for (size_t i = 0; i < n; ++i) {
    if (!out[i])
      fail(CH_ERR_CALLBACK, "optimizer '", name_, "' init_state for parameter '", slot.path,
           "' returned no array for state '", states_[i], "'");
    if (!valid[i])
      fail(CH_ERR_CALLBACK, "optimizer '", name_, "' init_state for parameter '", slot.path,
           "' returned for state '", states_[i], "' something that is not a live ch_array");
  }
  slot.state = std::move(taken);
}

void CallbackOptimizer::update_one(OptSlot& slot) {
  Arrays args;
  args.reserve(2 + slot.state.size());
  args.push_back(slot.param);
  args.push_back(slot.grad);
  for (const Array& a : slot.state) args.push_back(a);
  BorrowedArrays h(args);
  CallbackErrorScope errors;
  ch_status st = def_.update_one(def_.user_data, h.handles()[0], h.handles()[1], h.handles() + 2,
                                 slot.state.size(), t);
  if (st != CH_OK) {
    errors.keep_callback_error();
    callback_failed("update_one", slot.path, st);
  }
}

std::shared_ptr<CallbackOptimizer> make_callback_optimizer(const ch_optimizer_def& def,
                                                           const char* who) {
  if (def.version < 1 || def.version > CH_OPTIMIZER_DEF_VERSION)
    fail(CH_ERR_INVALID_ARGUMENT, who, ": def->version is ", def.version,
         "; this library knows versions 1..", CH_OPTIMIZER_DEF_VERSION);
  std::string name = def.name && def.name[0] ? def.name : "UserOptimizer";
  if (!def.update_one)
    fail(CH_ERR_INVALID_ARGUMENT, who, ": optimizer '", name, "' has no update_one callback");
  if (def.n_states > 64)
    fail(CH_ERR_INVALID_ARGUMENT, who, ": optimizer '", name, "' asks for ", def.n_states,
         " state arrays per parameter (at most 64)");
  if (def.n_states && !def.state_names)
    fail(CH_ERR_INVALID_ARGUMENT, who, ": optimizer '", name, "' has n_states ", def.n_states,
         " but no state_names");
  std::vector<std::string> states;
  std::set<std::string> seen;
  for (size_t i = 0; i < def.n_states; ++i) {
    const char* s = def.state_names[i];
    if (!s || !s[0] || std::string(s).find('/') != std::string::npos || !seen.insert(s).second)
      fail(CH_ERR_INVALID_ARGUMENT, who, ": optimizer '", name, "' state_names[", i, "] (",
           s ? "'" + std::string(s) + "'" : std::string("NULL"),
           ") must be a non-empty name without '/', distinct from the others");
    states.push_back(s);
  }
  return std::make_shared<CallbackOptimizer>(def, std::move(name), std::move(states));
}

}  // namespace chainerc::capi
