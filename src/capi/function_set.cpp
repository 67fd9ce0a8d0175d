// C API: ch_function_set (the seed's FunctionSet).
#include "core/device_backend.h"
#include "train_api.h"

using namespace chainerc;
using namespace chainerc::capi;

namespace {

// Releases the first n handles of arrays (on failure paths).
void release_all(ch_array** arrays, size_t n) noexcept {
  if (!arrays) return;
  for (size_t i = 0; i < n; ++i) {
    try {
      if (arrays[i]) handle_release(arrays[i], HandleKind::Array, "cleanup");
    } catch (...) {
    }
    arrays[i] = nullptr;
  }
}

}  // namespace

extern "C" {

ch_status ch_function_set_new(ch_function_set** out) {
  CH_API_BEGIN
  require_out(out, __func__);
  *out = static_cast<ch_function_set*>(
      handle_new(HandleKind::FunctionSet, std::make_shared<FunctionSet>()));
  CH_API_END
}

ch_function_set* ch_function_set_retain(ch_function_set* set) {
  return handle_retain(set, HandleKind::FunctionSet) ? set : nullptr;
}

ch_status ch_function_set_release(ch_function_set* set) {
  CH_API_BEGIN
  handle_release(set, HandleKind::FunctionSet, __func__);
  CH_API_END
}

ch_status ch_function_set_add_function(ch_function_set* set, const char* name,
                                       ch_function* function) {
  CH_API_BEGIN
  FunctionSetPtr s = function_set_of(set, __func__, "set");
  std::string n = string_arg(name, __func__, "name");
  FuncPtr f = function_of(function, __func__, "function");
  s->add(n, SetMember{std::move(f), nullptr}, __func__);
  CH_API_END
}

ch_status ch_function_set_add_set(ch_function_set* set, const char* name, ch_function_set* member) {
  CH_API_BEGIN
  FunctionSetPtr s = function_set_of(set, __func__, "set");
  std::string n = string_arg(name, __func__, "name");
  FunctionSetPtr m = function_set_of(member, __func__, "member");
  s->add(n, SetMember{nullptr, std::move(m)}, __func__);
  CH_API_END
}

ch_status ch_function_set_remove(ch_function_set* set, const char* name) {
  CH_API_BEGIN
  FunctionSetPtr s = function_set_of(set, __func__, "set");
  s->remove(string_arg(name, __func__, "name"), __func__);
  CH_API_END
}

size_t ch_function_set_member_count(const ch_function_set* set) {
  try {
    const std::shared_ptr<void>* p = handle_find(set, HandleKind::FunctionSet);
    return p ? static_cast<const FunctionSet*>(p->get())->members().size() : 0;
  } catch (...) {
    return 0;
  }
}

ch_status ch_function_set_member_name(const char** out, const ch_function_set* set, size_t index) {
  CH_API_BEGIN
  require_out(out, __func__);
  FunctionSetPtr s = function_set_of(set, __func__, "set");
  auto members = s->members();
  if (index >= members.size())
    fail(CH_ERR_INVALID_ARGUMENT, __func__, ": index ", index, " but the set has ", members.size(),
         " members");
  *out = s->intern(members[index].first);
  CH_API_END
}

ch_status ch_function_set_get_function(ch_function** out, const ch_function_set* set,
                                       const char* name) {
  CH_API_BEGIN
  require_out(out, __func__);
  FunctionSetPtr s = function_set_of(set, __func__, "set");
  std::string n = string_arg(name, __func__, "name");
  SetMember m = s->member(n, __func__);
  if (!m.function)
    fail(CH_ERR_INVALID_ARGUMENT, __func__, ": member '", n, "' is a function set, not a function");
  *out = new_function_handle(m.function);
  CH_API_END
}

ch_status ch_function_set_get_set(ch_function_set** out, const ch_function_set* set,
                                  const char* name) {
  CH_API_BEGIN
  require_out(out, __func__);
  FunctionSetPtr s = function_set_of(set, __func__, "set");
  std::string n = string_arg(name, __func__, "name");
  SetMember m = s->member(n, __func__);
  if (!m.set)
    fail(CH_ERR_INVALID_ARGUMENT, __func__, ": member '", n, "' is a function, not a function set");
  *out = static_cast<ch_function_set*>(handle_new(HandleKind::FunctionSet, m.set));
  CH_API_END
}

size_t ch_function_set_parameter_count(const ch_function_set* set) {
  try {
    const std::shared_ptr<void>* p = handle_find(set, HandleKind::FunctionSet);
    return p ? static_cast<const FunctionSet*>(p->get())->parameters().size() : 0;
  } catch (...) {
    return 0;
  }
}

ch_status ch_function_set_parameter(ch_array** param, ch_array** grad, const char** path,
                                    const ch_function_set* set, size_t index) {
  if (param) *param = nullptr;
  if (grad) *grad = nullptr;
  if (path) *path = nullptr;
  CH_API_BEGIN
  FunctionSetPtr s = function_set_of(set, __func__, "set");
  std::vector<NamedParameter> params = s->parameters();
  if (index >= params.size())
    fail(CH_ERR_INVALID_ARGUMENT, __func__, ": index ", index, " but the set has ", params.size(),
         " parameters");
  const char* interned = path ? s->intern(params[index].path) : nullptr;
  ch_array* p = param ? new_array_handle(params[index].param) : nullptr;
  try {
    if (grad) *grad = new_array_handle(params[index].grad);
  } catch (...) {
    release_all(&p, 1);
    throw;
  }
  if (param) *param = p;
  if (path) *path = interned;
  CH_API_END
}

ch_status ch_function_set_collect_parameters(ch_array** params, ch_array** grads, size_t capacity,
                                             size_t* n_params, const ch_function_set* set) {
  if (n_params) *n_params = 0;
  for (size_t i = 0; i < capacity; ++i) {
    if (params) params[i] = nullptr;
    if (grads) grads[i] = nullptr;
  }
  CH_API_BEGIN
  FunctionSetPtr s = function_set_of(set, __func__, "set");
  std::vector<NamedParameter> all = s->parameters();
  size_t n = std::min(capacity, all.size());
  try {
    for (size_t i = 0; i < n; ++i) {
      if (params) params[i] = new_array_handle(all[i].param);
      if (grads) grads[i] = new_array_handle(all[i].grad);
    }
  } catch (...) {
    release_all(params, n);
    release_all(grads, n);
    throw;
  }
  if (n_params) *n_params = all.size();
  CH_API_END
}

ch_status ch_function_set_copy_parameters_from(ch_function_set* set,
                                               const ch_function_set* source) {
  CH_API_BEGIN
  FunctionSetPtr dst = function_set_of(set, __func__, "set");
  FunctionSetPtr src = function_set_of(source, __func__, "source");
  std::vector<NamedParameter> from = src->parameters();
  Arrays arrays;
  std::vector<std::string> paths;
  for (NamedParameter& p : from) {
    arrays.push_back(p.param);
    paths.push_back(p.path);
  }
  copy_parameters(dst->parameters(), arrays, paths, __func__);
  CH_API_END
}

ch_status ch_function_set_copy_parameters_from_arrays(ch_function_set* set, ch_array* const* params,
                                                      size_t n) {
  CH_API_BEGIN
  FunctionSetPtr dst = function_set_of(set, __func__, "set");
  if (n && !params) fail(CH_ERR_INVALID_ARGUMENT, __func__, ": params is NULL with n ", n);
  Arrays arrays;
  for (size_t i = 0; i < n; ++i) {
    std::string arg = "params[" + std::to_string(i) + "]";
    arrays.push_back(array_of(params[i], __func__, arg.c_str()));
  }
  copy_parameters(dst->parameters(), arrays, {}, __func__);
  CH_API_END
}

ch_status ch_function_set_to_cpu(ch_function_set* set) {
  CH_API_BEGIN
  FunctionSetPtr s = function_set_of(set, __func__, "set");
  s->move_parameters(Device{});
  CH_API_END
}

ch_status ch_function_set_to_gpu(ch_function_set* set, ch_device device) {
  CH_API_BEGIN
  FunctionSetPtr s = function_set_of(set, __func__, "set");
  Device d = Device::from_c(device);
  if (d.is_cpu()) return ch_function_set_to_cpu(set);
  if (d.type != CH_DEVICE_CUDA)
    fail(CH_ERR_DEVICE, __func__, ": device type ", d.type, " is neither CPU (", CH_DEVICE_CPU,
         ") nor CUDA (", CH_DEVICE_CUDA, ")");
  backend_for(d, __func__);  // "no CUDA device: ..." when there is none
  s->move_parameters(d);
  CH_API_END
}

}  // extern "C"
