// C API: ch_optimizer (the seed's Optimizer and chainer.optimizers).
#include "callback_optimizer.h"
#include "train/optimizers/optimizers.h"
#include "train_api.h"

using namespace chainerc;
using namespace chainerc::capi;

namespace {

// *out = a new handle on the optimizer that factory(who) returns.
template <typename Factory>
ch_status make(ch_optimizer** out, const char* who, Factory&& factory) {
  CH_API_BEGIN
  require_out(out, who);
  *out = static_cast<ch_optimizer*>(handle_new(HandleKind::Optimizer, factory(who)));
  CH_API_END
}

}  // namespace

extern "C" {

ch_status ch_optimizer_sgd_new(ch_optimizer** out, double lr) {
  return make(out, __func__, [&](const char* who) { return make_sgd(lr, who); });
}

ch_status ch_optimizer_momentum_sgd_new(ch_optimizer** out, double lr, double momentum) {
  return make(out, __func__, [&](const char* who) { return make_momentum_sgd(lr, momentum, who); });
}

ch_status ch_optimizer_adagrad_new(ch_optimizer** out, double lr, double eps) {
  return make(out, __func__, [&](const char* who) { return make_adagrad(lr, eps, who); });
}

ch_status ch_optimizer_adadelta_new(ch_optimizer** out, double rho, double eps) {
  return make(out, __func__, [&](const char* who) { return make_adadelta(rho, eps, who); });
}

ch_status ch_optimizer_adam_new(ch_optimizer** out, double alpha, double beta1, double beta2,
                                double lam, double eps) {
  return make(out, __func__,
              [&](const char* who) { return make_adam(alpha, beta1, beta2, lam, eps, who); });
}

ch_status ch_optimizer_rmsprop_new(ch_optimizer** out, double lr, double alpha, double eps) {
  return make(out, __func__, [&](const char* who) { return make_rmsprop(lr, alpha, eps, who); });
}

ch_status ch_optimizer_nesterov_ag_new(ch_optimizer** out, double lr, double momentum) {
  return make(out, __func__, [&](const char* who) { return make_nesterov_ag(lr, momentum, who); });
}

ch_status ch_optimizer_adam_new_ex(ch_optimizer** out, const ch_adam_options* options) {
  return make(out, __func__, [&](const char* who) {
    const ch_adam_options o = options ? *options : ch_adam_options CH_ADAM_OPTIONS_INIT;
    if (o.version < 1 || o.version > CH_ADAM_OPTIONS_VERSION)
      fail(CH_ERR_INVALID_ARGUMENT, who, ": ch_adam_options version ", o.version,
           " is not one this library knows (1 to ", CH_ADAM_OPTIONS_VERSION, ")");
    if (o.amsgrad != 0 && o.amsgrad != 1)
      fail(CH_ERR_INVALID_ARGUMENT, who, ": amsgrad is ", o.amsgrad, "; it must be 0 or 1");
    AdamConfig c;
    c.alpha = o.alpha;
    c.beta1 = o.beta1;
    c.beta2 = o.beta2;
    c.eps = o.eps;
    c.eta = o.eta;
    c.weight_decay_rate = o.weight_decay_rate;
    c.amsgrad = o.amsgrad != 0;
    c.lam = o.lam;
    return make_adam(c, who);
  });
}

ch_status ch_optimizer_new(ch_optimizer** out, const ch_optimizer_def* def) {
  CH_API_BEGIN
  require_out(out, __func__);
  if (!def) fail(CH_ERR_INVALID_ARGUMENT, __func__, ": def is NULL");
  std::shared_ptr<CallbackOptimizer> opt = make_callback_optimizer(*def, __func__);
  try {
    *out = static_cast<ch_optimizer*>(handle_new(HandleKind::Optimizer, OptimizerPtr(opt)));
  } catch (...) {
    opt->disown();  // on failure the caller keeps ownership of user_data
    throw;
  }
  CH_API_END
}

ch_optimizer* ch_optimizer_retain(ch_optimizer* optimizer) {
  return handle_retain(optimizer, HandleKind::Optimizer) ? optimizer : nullptr;
}

ch_status ch_optimizer_release(ch_optimizer* optimizer) {
  CH_API_BEGIN
  handle_release(optimizer, HandleKind::Optimizer, __func__);
  CH_API_END
}

const char* ch_optimizer_name(const ch_optimizer* optimizer) {
  const std::shared_ptr<void>* p = handle_find(optimizer, HandleKind::Optimizer);
  return p ? static_cast<const Optimizer*>(p->get())->name() : "";
}

ch_status ch_optimizer_get_hyperparam(double* out, const ch_optimizer* optimizer,
                                      const char* name) {
  CH_API_BEGIN
  if (!out) fail(CH_ERR_INVALID_ARGUMENT, __func__, ": the output pointer 'out' is NULL");
  *out = 0;
  OptimizerPtr o = optimizer_of(optimizer, __func__, "optimizer");
  *out = o->get_hyperparam(string_arg(name, __func__, "name"), __func__);
  CH_API_END
}

ch_status ch_optimizer_set_hyperparam(ch_optimizer* optimizer, const char* name, double value) {
  CH_API_BEGIN
  OptimizerPtr o = optimizer_of(optimizer, __func__, "optimizer");
  o->set_hyperparam(string_arg(name, __func__, "name"), value, __func__);
  CH_API_END
}

ch_status ch_optimizer_setup(ch_optimizer* optimizer, const ch_function_set* set) {
  CH_API_BEGIN
  OptimizerPtr o = optimizer_of(optimizer, __func__, "optimizer");
  FunctionSetPtr s = function_set_of(set, __func__, "set");
  o->setup(s->parameters(), __func__);
  CH_API_END
}

ch_status ch_optimizer_setup_arrays(ch_optimizer* optimizer, ch_array* const* params,
                                    ch_array* const* grads, size_t n) {
  CH_API_BEGIN
  OptimizerPtr o = optimizer_of(optimizer, __func__, "optimizer");
  if (n && (!params || !grads))
    fail(CH_ERR_INVALID_ARGUMENT, __func__, ": ", !params ? "params" : "grads", " is NULL with n ",
         n);
  std::vector<NamedParameter> list;
  for (size_t i = 0; i < n; ++i) {
    std::string pa = "params[" + std::to_string(i) + "]", ga = "grads[" + std::to_string(i) + "]";
    list.push_back(NamedParameter{std::to_string(i), array_of(params[i], __func__, pa.c_str()),
                                  array_of(grads[i], __func__, ga.c_str())});
  }
  o->setup(std::move(list), __func__);
  CH_API_END
}

size_t ch_optimizer_parameter_count(const ch_optimizer* optimizer) {
  const std::shared_ptr<void>* p = handle_find(optimizer, HandleKind::Optimizer);
  return p ? static_cast<const Optimizer*>(p->get())->slots.size() : 0;
}

ch_status ch_optimizer_parameter(ch_array** param, ch_array** grad, const char** path,
                                 const ch_optimizer* optimizer, size_t index) {
  if (param) *param = nullptr;
  if (grad) *grad = nullptr;
  if (path) *path = nullptr;
  CH_API_BEGIN
  OptimizerPtr o = optimizer_of(optimizer, __func__, "optimizer");
  if (index >= o->slots.size())
    fail(CH_ERR_INVALID_ARGUMENT, __func__, ": index ", index, " but optimizer '", o->name(),
         "' has ", o->slots.size(), " parameters");
  const OptSlot& s = o->slots[index];
  ch_array* p = param ? new_array_handle(s.param) : nullptr;
  try {
    if (grad) *grad = new_array_handle(s.grad);
  } catch (...) {
    if (p) handle_release(p, HandleKind::Array, __func__);
    throw;
  }
  if (param) *param = p;
  if (path) *path = s.path.c_str();
  CH_API_END
}

int64_t ch_optimizer_t(const ch_optimizer* optimizer) {
  const std::shared_ptr<void>* p = handle_find(optimizer, HandleKind::Optimizer);
  return p ? static_cast<const Optimizer*>(p->get())->t : 0;
}

ch_status ch_optimizer_set_t(ch_optimizer* optimizer, int64_t t) {
  CH_API_BEGIN
  OptimizerPtr o = optimizer_of(optimizer, __func__, "optimizer");
  if (t < 0) fail(CH_ERR_INVALID_ARGUMENT, __func__, ": t is ", t, "; it must be >= 0");
  o->t = t;
  CH_API_END
}

int64_t ch_optimizer_epoch(const ch_optimizer* optimizer) {
  const std::shared_ptr<void>* p = handle_find(optimizer, HandleKind::Optimizer);
  return p ? static_cast<const Optimizer*>(p->get())->epoch : 0;
}

ch_status ch_optimizer_new_epoch(ch_optimizer* optimizer) {
  CH_API_BEGIN
  OptimizerPtr o = optimizer_of(optimizer, __func__, "optimizer");
  if (o->epoch == INT64_MAX)
    fail(CH_ERR_INVALID_ARGUMENT, __func__, ": the epoch count is ", o->epoch,
         ", the largest; another epoch would wrap it");
  ++o->epoch;
  CH_API_END
}

ch_status ch_optimizer_set_step_in_backward(ch_optimizer* optimizer, int enable) {
  CH_API_BEGIN
  optimizer_of(optimizer, __func__, "optimizer")->set_step_in_backward(enable != 0, __func__);
  CH_API_END
}

int ch_optimizer_step_in_backward(const ch_optimizer* optimizer) {
  const std::shared_ptr<void>* p = handle_find(optimizer, HandleKind::Optimizer);
  return p && static_cast<const Optimizer*>(p->get())->step_in_backward ? 1 : 0;
}

ch_status ch_optimizer_zero_grads(ch_optimizer* optimizer) {
  CH_API_BEGIN
  optimizer_of(optimizer, __func__, "optimizer")->zero_grads();
  CH_API_END
}

ch_status ch_optimizer_update(ch_optimizer* optimizer) {
  CH_API_BEGIN
  OptimizerPtr o = optimizer_of(optimizer, __func__, "optimizer");
  if (o->update_hook) run_update_hook(*o, optimizer, __func__);
  o->update(__func__);
  CH_API_END
}

ch_status ch_optimizer_accumulate_grads(ch_optimizer* optimizer, ch_array* const* grads, size_t n) {
  CH_API_BEGIN
  OptimizerPtr o = optimizer_of(optimizer, __func__, "optimizer");
  if (n && !grads) fail(CH_ERR_INVALID_ARGUMENT, __func__, ": grads is NULL with n ", n);
  Arrays list;
  for (size_t i = 0; i < n; ++i) {
    std::string arg = "grads[" + std::to_string(i) + "]";
    list.push_back(array_of(grads[i], __func__, arg.c_str()));
  }
  o->accumulate_grads(list, __func__);
  CH_API_END
}

ch_status ch_optimizer_compute_grads_norm(double* out, const ch_optimizer* optimizer) {
  CH_API_BEGIN
  if (!out) fail(CH_ERR_INVALID_ARGUMENT, __func__, ": the output pointer 'out' is NULL");
  *out = 0;
  *out = optimizer_of(optimizer, __func__, "optimizer")->grads_norm(__func__);
  CH_API_END
}

ch_status ch_optimizer_clip_grads(ch_optimizer* optimizer, double maxnorm) {
  CH_API_BEGIN
  optimizer_of(optimizer, __func__, "optimizer")->clip_grads(maxnorm, __func__);
  CH_API_END
}

ch_status ch_optimizer_weight_decay(ch_optimizer* optimizer, double decay) {
  CH_API_BEGIN
  optimizer_of(optimizer, __func__, "optimizer")->weight_decay(decay, __func__);
  CH_API_END
}

size_t ch_optimizer_state_count(const ch_optimizer* optimizer) {
  const std::shared_ptr<void>* p = handle_find(optimizer, HandleKind::Optimizer);
  if (!p) return 0;
  size_t n = 0;
  for (const OptSlot& s : static_cast<const Optimizer*>(p->get())->slots) n += s.state.size();
  return n;
}

ch_status ch_optimizer_state(ch_array** array, const char** key, const ch_optimizer* optimizer,
                             size_t index) {
  if (array) *array = nullptr;
  if (key) *key = nullptr;
  CH_API_BEGIN
  OptimizerPtr o = optimizer_of(optimizer, __func__, "optimizer");
  size_t i = index;
  for (const OptSlot& s : o->slots) {
    if (i < s.state.size()) {
      if (array) *array = new_array_handle(s.state[i]);
      if (key) *key = s.keys[i].c_str();
      return CH_OK;
    }
    i -= s.state.size();
  }
  fail(CH_ERR_INVALID_ARGUMENT, __func__, ": index ", index, " but optimizer '", o->name(),
       "' has ", index - i, " state arrays");
  CH_API_END
}

}  // extern "C"
