// C API: ch_variable.
#include "api.h"

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
  if (!grad) {
    v->grad = Array();
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
    v->grad = g;
  }
  v->grad_owned = false;  // the caller may hold this buffer: never add into it in place
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

}  // extern "C"
