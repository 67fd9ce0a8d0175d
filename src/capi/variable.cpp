// C API: ch_variable.
#include "api.h"
#include "core/grad_mode.h"

using namespace chainerc;
using namespace chainerc::capi;

extern "C" {

ch_status ch_variable_new(ch_variable** out, ch_array* data, int32_t is_volatile) {
  CH_API_BEGIN
  require_out(out, __func__);
  const Array& a = array_of(data, __func__, "data");
  *out = new_variable_handle(std::make_shared<VariableImpl>(a, is_volatile != 0));
  CH_API_END
}

ch_variable* ch_variable_retain(ch_variable* variable) {
  return handle_retain(variable, HandleKind::Variable) ? variable : nullptr;
}

ch_status ch_variable_release(ch_variable* variable) {
  CH_API_BEGIN
  handle_release(variable, HandleKind::Variable, __func__);
  CH_API_END
}

ch_status ch_variable_data(ch_array** out, const ch_variable* variable) {
  CH_API_BEGIN
  require_out(out, __func__);
  VarPtr v = variable_of(variable, __func__, "variable");
  if (v->data_released)
    fail(CH_ERR_GRAPH, __func__, ": the variable's data (a ", v->data.describe(),
         ") was released: its last handle was released while no function needed the data for "
         "backward (as Chainer v2 frees inputs it does not retain); keep a handle to a variable "
         "whose data you want to read later");
  *out = new_array_handle(v->data);
  CH_API_END
}

ch_status ch_variable_set_data(ch_variable* variable, ch_array* data) {
  CH_API_BEGIN
  VarPtr v = variable_of(variable, __func__, "variable");
  Array old = array_of(data, __func__, "data");  // the new data, then the one replaced
  {
    std::lock_guard<std::mutex> lock(variable_release_mutex());
    std::swap(v->data, old);
    v->data_released = false;
    v->data_replaced.store(true, std::memory_order_release);
  }
  // The replaced data goes outside the lock: its buffer's release callback
  // may release other variables (variable_handle_destroyed takes the lock).
  old = Array();
  CH_API_END
}

ch_status ch_variable_grad(ch_array** out, const ch_variable* variable) {
  CH_API_BEGIN
  require_out(out, __func__);
  VarPtr v = variable_of(variable, __func__, "variable");
  if (v->grad.defined()) *out = new_array_handle(v->grad);
  CH_API_END
}

ch_status ch_variable_set_grad(ch_variable* variable, ch_array* grad) {
  CH_API_BEGIN
  VarPtr v = variable_of(variable, __func__, "variable");
  // The replaced gradient and gradient graph go last, once every field holds
  // its new value: letting them go may run a wrapped buffer's release
  // callback, which may call this function on the same variable.
  Array old_grad;
  VarPtr old_graph;
  if (!grad) {
    old_grad.swap(v->grad);
  } else {
    const Array& g = array_of(grad, __func__, "grad");
    // One status per mismatch: shape first, then dtype, then device.
    if (g.shape() != v->data.shape() || g.dtype() != v->data.dtype() ||
        g.device() != v->data.device())
      fail(g.shape() != v->data.shape()   ? CH_ERR_SHAPE
           : g.dtype() != v->data.dtype() ? CH_ERR_DTYPE
                                          : CH_ERR_DEVICE,
           __func__, ": grad is a ", g.describe(), " but the variable's data is a ",
           v->data.describe());
    Array next = g;
    old_grad.swap(v->grad);
    v->grad.swap(next);
  }
  old_graph.swap(v->grad_var);  // a double-backprop pass's gradient graph: no longer the grad
  v->grad_owned = false;        // the caller may hold this buffer: never add into it in place
  v->grad_epoch = 0;
  CH_API_END
}

ch_status ch_variable_creator(ch_function** out, const ch_variable* variable) {
  CH_API_BEGIN
  require_out(out, __func__);
  VarPtr v = variable_of(variable, __func__, "variable");
  if (v->creator) *out = new_function_handle(v->creator);
  CH_API_END
}

ch_status ch_variable_set_requires_grad(ch_variable* variable, int32_t requires_grad) {
  CH_API_BEGIN
  variable_of(variable, __func__, "variable")->requires_grad = requires_grad != 0;
  CH_API_END
}

int32_t ch_variable_requires_grad(const ch_variable* variable) {
  const std::shared_ptr<void>* p = handle_find(variable, HandleKind::Variable);
  return p ? static_cast<const VariableImpl*>(p->get())->requires_grad : 0;
}

int32_t ch_variable_is_volatile(const ch_variable* variable) {
  const std::shared_ptr<void>* p = handle_find(variable, HandleKind::Variable);
  return p ? static_cast<const VariableImpl*>(p->get())->is_volatile : 0;
}

int64_t ch_variable_size(const ch_variable* variable) {
  const std::shared_ptr<void>* p = handle_find(variable, HandleKind::Variable);
  return p ? static_cast<const VariableImpl*>(p->get())->data.size() : 0;
}

ch_status ch_variable_backward(ch_variable* variable, int32_t retain_grad) {
  CH_API_BEGIN
  backward(variable_of(variable, __func__, "variable"), retain_grad != 0);
  CH_API_END
}

ch_status ch_variable_unchain_backward(ch_variable* variable) {
  CH_API_BEGIN
  unchain_backward(variable_of(variable, __func__, "variable"));
  CH_API_END
}

// static: inside extern "C" an anonymous namespace would still export it.
static BackwardOptions backward_options(const ch_backward_options* o, const char* who) {
  BackwardOptions r;
  if (!o) return r;
  if (o->version < 1 || o->version > CH_BACKWARD_OPTIONS_VERSION)
    fail(CH_ERR_INVALID_ARGUMENT, who, ": options->version is ", o->version,
         "; this library knows versions 1..", CH_BACKWARD_OPTIONS_VERSION,
         " (initialise with CH_BACKWARD_OPTIONS_INIT)");
  r.retain_grad = o->retain_grad != 0;
  r.enable_double_backprop = o->enable_double_backprop != 0;
  return r;
}

ch_status ch_variable_backward_ex(ch_variable* variable, const ch_backward_options* options) {
  CH_API_BEGIN
  VarPtr v = variable_of(variable, __func__, "variable");
  backward_ex(v, backward_options(options, __func__));
  CH_API_END
}

ch_status ch_variable_grad_var(ch_variable** out, const ch_variable* variable) {
  CH_API_BEGIN
  require_out(out, __func__);
  if (VarPtr g = grad_variable(variable_of(variable, __func__, "variable")))
    *out = new_variable_handle(std::move(g));
  CH_API_END
}

ch_status ch_grad(ch_variable** out, ch_variable* const* outputs, size_t n_outputs,
                  ch_variable* const* inputs, size_t n_inputs, ch_variable* const* grad_outputs,
                  const ch_backward_options* options) {
  CH_API_BEGIN
  if (!out && n_inputs) fail(CH_ERR_INVALID_ARGUMENT, __func__, ": out is NULL");
  for (size_t i = 0; i < n_inputs; ++i) out[i] = nullptr;
  if (n_outputs && !outputs) fail(CH_ERR_INVALID_ARGUMENT, __func__, ": outputs is NULL");
  if (n_inputs && !inputs) fail(CH_ERR_INVALID_ARGUMENT, __func__, ": inputs is NULL");
  const BackwardOptions opt = backward_options(options, __func__);
  std::vector<VarPtr> ys, xs, gys;
  for (size_t j = 0; j < n_outputs; ++j) {
    std::string arg = "outputs[" + std::to_string(j) + "]";
    ys.push_back(variable_of(outputs[j], __func__, arg.c_str()));
  }
  for (size_t i = 0; i < n_inputs; ++i) {
    std::string arg = "inputs[" + std::to_string(i) + "]";
    xs.push_back(variable_of(inputs[i], __func__, arg.c_str()));
  }
  if (grad_outputs)
    for (size_t j = 0; j < n_outputs; ++j) {
      std::string arg = "grad_outputs[" + std::to_string(j) + "]";
      gys.push_back(grad_outputs[j] ? variable_of(grad_outputs[j], __func__, arg.c_str())
                                    : nullptr);
    }
  std::vector<VarPtr> gxs = grad(ys, xs, gys, opt);
  std::vector<ch_variable*> handles;
  try {
    for (VarPtr& g : gxs) handles.push_back(g ? new_variable_handle(std::move(g)) : nullptr);
  } catch (...) {
    for (ch_variable* h : handles) ch_variable_release(h);
    throw;
  }
  for (size_t i = 0; i < n_inputs; ++i) out[i] = handles[i];
  CH_API_END
}

void ch_config_set_enable_backprop(int32_t enable) { set_backprop_enabled_globally(enable != 0); }
int32_t ch_config_enable_backprop(void) { return backprop_enabled_globally() ? 1 : 0; }

ch_status ch_backprop_mode_push(int32_t enable) {
  CH_API_BEGIN
  push_backprop_mode(enable != 0);
  CH_API_END
}

ch_status ch_backprop_mode_pop(void) {
  CH_API_BEGIN
  if (!pop_backprop_mode())
    fail(CH_ERR_GRAPH, __func__, ": no backprop mode scope is open on this thread");
  CH_API_END
}

int32_t ch_backprop_mode_enabled(void) { return backprop_enabled() ? 1 : 0; }

}  // extern "C"
