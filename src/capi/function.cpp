// C API: ch_function (user-defined functions and graph nodes) and ch_context.
#include <cstring>

#include "api.h"
#include "capi/callback_function.h"
#include "core/device_backend.h"

using namespace chainerc;
using namespace chainerc::capi;

namespace {

CallbackContext& context_of(const ch_context* h, const char* who) {
  return handle_object<CallbackContext>(h, HandleKind::Context, who, "ctx");
}

// The parameter list of a function object; parameterless built-ins have none.
Parameters& parameters_of(const FuncPtr& f, const char* who) {
  if (!f->parameters)
    fail(CH_ERR_INVALID_ARGUMENT, who, ": '", f->name(),
         "' is a built-in function without parameters");
  return *f->parameters;
}

}  // namespace

extern "C" {

ch_status ch_function_new(ch_function** out, const ch_function_def* def) {
  CH_API_BEGIN
  require_out(out, __func__);
  if (!def) fail(CH_ERR_INVALID_ARGUMENT, __func__, ": def is NULL");
  if (def->version < 1 || def->version > CH_FUNCTION_DEF_VERSION)
    fail(CH_ERR_INVALID_ARGUMENT, __func__, ": def->version is ", def->version,
         "; this library knows versions 1..", CH_FUNCTION_DEF_VERSION);
  if (!def->forward && !def->forward_cpu && !def->forward_gpu)
    fail(CH_ERR_INVALID_ARGUMENT, __func__, ": function '", def->name ? def->name : "",
         "' has no forward callback");
  auto definition = std::make_shared<CallbackDefinition>(*def);
  try {
    *out = new_function_handle(
        std::make_shared<CallbackFunction>(definition, std::make_shared<Parameters>()));
  } catch (...) {
    definition->def.destroy = nullptr;  // on failure the caller keeps ownership of user_data
    throw;
  }
  CH_API_END
}

ch_function* ch_function_retain(ch_function* function) {
  return handle_retain(function, HandleKind::Function) ? function : nullptr;
}

ch_status ch_function_release(ch_function* function) {
  CH_API_BEGIN
  handle_release(function, HandleKind::Function, __func__);
  CH_API_END
}

ch_status ch_function_apply(ch_function* function, ch_variable* const* inputs, size_t n_inputs,
                            ch_variable** outputs, size_t capacity, size_t* n_outputs) {
  CH_API_BEGIN
  if (n_outputs) *n_outputs = 0;
  if (capacity && !outputs)
    fail(CH_ERR_INVALID_ARGUMENT, __func__, ": outputs is NULL with capacity ", capacity);
  for (size_t i = 0; i < capacity; ++i) outputs[i] = nullptr;
  FuncPtr f = function_of(function, __func__, "function");
  std::vector<VarPtr> xs = variables_of(inputs, n_inputs, __func__, "inputs", "n_inputs");
  FuncPtr node = f->clone();  // the seed's copy on call: one graph node per application
  if (!node)
    fail(CH_ERR_INVALID_ARGUMENT, __func__, ": '", f->name(),
         "' is a built-in function node and cannot be applied again; call its ch_functions_* entry "
         "point");
  std::vector<VarPtr> ys = apply_function(node, std::move(xs));
  size_t n = std::min(capacity, ys.size());
  try {
    for (size_t i = 0; i < n; ++i) outputs[i] = new_variable_handle(ys[i]);
  } catch (...) {
    for (size_t i = 0; i < n; ++i) {
      if (outputs[i]) handle_release(outputs[i], HandleKind::Variable, __func__);
      outputs[i] = nullptr;
    }
    throw;
  }
  if (n_outputs) *n_outputs = ys.size();
  CH_API_END
}

const char* ch_function_name(const ch_function* function) {
  const std::shared_ptr<void>* p = handle_find(function, HandleKind::Function);
  return p ? static_cast<const Function*>(p->get())->name() : "";
}

size_t ch_function_input_count(const ch_function* function) {
  const std::shared_ptr<void>* p = handle_find(function, HandleKind::Function);
  return p ? static_cast<const Function*>(p->get())->inputs.size() : 0;
}

size_t ch_function_output_count(const ch_function* function) {
  const std::shared_ptr<void>* p = handle_find(function, HandleKind::Function);
  return p ? static_cast<const Function*>(p->get())->outputs.size() : 0;
}

ch_status ch_function_input(ch_variable** out, const ch_function* function, size_t index) {
  CH_API_BEGIN
  require_out(out, __func__);
  FuncPtr f = function_of(function, __func__, "function");
  if (index >= f->inputs.size())
    fail(CH_ERR_INVALID_ARGUMENT, __func__, ": index ", index, " but '", f->name(), "' has ",
         f->inputs.size(), " inputs");
  const VarPtr& x = f->inputs[index];
  if (!x) return CH_OK;  // *out stays NULL once unchained
  // Under the lock, so that the data is not released while the handle is made.
  std::lock_guard<std::mutex> lock(variable_release_mutex());
  *out = new_variable_handle(x);
  CH_API_END
}

ch_status ch_function_output(ch_variable** out, const ch_function* function, size_t index) {
  CH_API_BEGIN
  require_out(out, __func__);
  FuncPtr f = function_of(function, __func__, "function");
  if (index >= f->outputs.size())
    fail(CH_ERR_INVALID_ARGUMENT, __func__, ": index ", index, " but '", f->name(), "' has ",
         f->outputs.size(), " outputs");
  VarPtr y = f->outputs[index].lock();
  if (!y) return CH_OK;  // *out stays NULL once the output is gone
  std::lock_guard<std::mutex> lock(variable_release_mutex());
  *out = new_variable_handle(y);  // y outlives the lock: its last reference never goes under it
  CH_API_END
}

ch_status ch_function_unchain(ch_function* function) {
  CH_API_BEGIN
  function_of(function, __func__, "function")->unchain();
  CH_API_END
}

ch_status ch_function_add_parameter(ch_function* function, const char* name, ch_array* param,
                                    ch_array* grad) {
  CH_API_BEGIN
  Parameters& params = parameters_of(function_of(function, __func__, "function"), __func__);
  const Array& p = array_of(param, __func__, "param");
  const Array& g = array_of(grad, __func__, "grad");
  if (p.shape() != g.shape() || p.dtype() != g.dtype() || p.device() != g.device())
    fail(CH_ERR_SHAPE, __func__, ": param is a ", p.describe(), " but grad is a ", g.describe());
  params.push_back(Parameter{name ? name : "", p, g});
  CH_API_END
}

size_t ch_function_parameter_count(const ch_function* function) {
  const std::shared_ptr<void>* p = handle_find(function, HandleKind::Function);
  if (!p) return 0;
  auto* f = static_cast<const Function*>(p->get());
  return f->parameters ? f->parameters->size() : 0;
}

ch_status ch_function_parameter(ch_array** param, ch_array** grad, const char** name,
                                const ch_function* function, size_t index) {
  if (param) *param = nullptr;
  if (grad) *grad = nullptr;
  if (name) *name = nullptr;
  CH_API_BEGIN
  FuncPtr f = function_of(function, __func__, "function");
  Parameters& params = parameters_of(f, __func__);
  if (index >= params.size())
    fail(CH_ERR_INVALID_ARGUMENT, __func__, ": index ", index, " but '", f->name(), "' has ",
         params.size(), " parameters");
  ch_array* p = param ? new_array_handle(params[index].param) : nullptr;
  try {
    if (grad) *grad = new_array_handle(params[index].grad);
  } catch (...) {
    ch_array_release(p);
    throw;
  }
  if (param) *param = p;
  if (name) *name = params[index].name.c_str();
  CH_API_END
}

ch_status ch_context_add_output(ch_context* ctx, ch_array* output) {
  CH_API_BEGIN
  CallbackContext& c = context_of(ctx, __func__);
  if (!c.outputs)
    fail(CH_ERR_CALLBACK, __func__, ": function '", c.function_name,
         "' reported an output outside forward");
  c.outputs->push_back(array_of(output, __func__, "output"));
  CH_API_END
}

ch_status ch_context_set_grad_input(ch_context* ctx, size_t index, ch_array* grad) {
  CH_API_BEGIN
  CallbackContext& c = context_of(ctx, __func__);
  if (!c.grad_inputs)
    fail(CH_ERR_CALLBACK, __func__, ": function '", c.function_name,
         "' set an input gradient outside backward");
  if (index >= c.grad_inputs->size())
    fail(CH_ERR_CALLBACK, __func__, ": function '", c.function_name, "' set the gradient of input ",
         index, " but it has ", c.grad_inputs->size(), " inputs");
  const Array& g = array_of(grad, __func__, "grad");
  const Array& x = (*c.inputs)[index];
  if (g.shape() != x.shape() || g.dtype() != x.dtype() || g.device() != x.device())
    fail(CH_ERR_CALLBACK, __func__, ": function '", c.function_name, "' gave input ", index,
         " a gradient that is a ", g.describe(), "; the input is a ", x.describe());
  (*c.grad_inputs)[index] = g;
  CH_API_END
}

ch_status ch_context_save(ch_context* ctx, ch_array* array) {
  CH_API_BEGIN
  CallbackContext& c = context_of(ctx, __func__);
  if (!c.saved) fail(CH_ERR_CALLBACK, __func__, ": this context cannot keep arrays");
  c.saved->push_back(array_of(array, __func__, "array"));
  CH_API_END
}

size_t ch_context_saved_count(const ch_context* ctx) {
  const std::shared_ptr<void>* p = handle_find(ctx, HandleKind::Context);
  if (!p) return 0;
  auto* c = static_cast<const CallbackContext*>(p->get());
  return c->saved ? c->saved->size() : 0;
}

ch_status ch_context_saved(ch_array** out, const ch_context* ctx, size_t index) {
  CH_API_BEGIN
  require_out(out, __func__);
  CallbackContext& c = context_of(ctx, __func__);
  size_t n = c.saved ? c.saved->size() : 0;
  if (index >= n)
    fail(CH_ERR_INVALID_ARGUMENT, __func__, ": index ", index, " but ", n, " arrays are saved");
  *out = new_array_handle((*c.saved)[index]);
  CH_API_END
}

ch_status ch_context_set_user_data(ch_context* ctx, void* data, void (*destroy)(void*)) {
  CH_API_BEGIN
  CallbackContext& c = context_of(ctx, __func__);
  if (!c.user_data) fail(CH_ERR_CALLBACK, __func__, ": this context has no user data slot");
  if (*c.user_destroy && *c.user_data != data) (*c.user_destroy)(*c.user_data);
  *c.user_data = data;
  *c.user_destroy = destroy;
  CH_API_END
}

void* ch_context_user_data(const ch_context* ctx) {
  const std::shared_ptr<void>* p = handle_find(ctx, HandleKind::Context);
  if (!p) return nullptr;
  auto* c = static_cast<const CallbackContext*>(p->get());
  return c->user_data ? *c->user_data : nullptr;
}

int32_t ch_context_needs_input_grad(const ch_context* ctx, size_t index) {
  const std::shared_ptr<void>* p = handle_find(ctx, HandleKind::Context);
  if (!p) return 1;
  auto* c = static_cast<const CallbackContext*>(p->get());
  return !c->function || c->function->needs_input_grad(index) ? 1 : 0;
}

ch_device ch_context_device(const ch_context* ctx) {
  const std::shared_ptr<void>* p = handle_find(ctx, HandleKind::Context);
  if (!p) return ch_device{0, 0};
  return static_cast<const CallbackContext*>(p->get())->device.to_c();
}

void* ch_context_stream(const ch_context* ctx) {
  // The engine stream of the callback's device, on which chainerc's CUDA
  // kernels run: see the contract in include/ch/function.h.
  const std::shared_ptr<void>* p = handle_find(ctx, HandleKind::Context);
  if (!p) return nullptr;
  const Device d = static_cast<const CallbackContext*>(p->get())->device;
  if (d.is_cpu()) return nullptr;
  try {
    DeviceBackend* b = cuda_backend();
    return b ? b->engine_stream(d.index) : nullptr;
  } catch (...) {
    return nullptr;
  }
}

ch_status ch_context_function(ch_function** out, const ch_context* ctx) {
  CH_API_BEGIN
  require_out(out, __func__);
  CallbackContext& c = context_of(ctx, __func__);
  if (!c.function) fail(CH_ERR_INVALID_ARGUMENT, __func__, ": this context belongs to no function");
  *out = new_function_handle(c.function);
  CH_API_END
}

}  // extern "C"
