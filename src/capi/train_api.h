// Shared by the training shims (function sets, optimizers, checkpoints).
#pragma once

#include "api.h"
#include "train/function_set.h"
#include "train/optimizer.h"

namespace chainerc::capi {

inline FunctionSetPtr function_set_of(const ch_function_set* h, const char* who, const char* arg) {
  return handle_shared<FunctionSet>(h, HandleKind::FunctionSet, who, arg);
}
inline OptimizerPtr optimizer_of(const ch_optimizer* h, const char* who, const char* arg) {
  return handle_shared<Optimizer>(h, HandleKind::Optimizer, who, arg);
}
// Runs the optimizer's update hook (src/capi/optimizer_hook.cpp); throws its failure.
void run_update_hook(const Optimizer& o, ch_optimizer* handle, const char* who);

inline std::string string_arg(const char* s, const char* who, const char* arg) {
  if (!s) fail(CH_ERR_INVALID_ARGUMENT, who, ": argument '", arg, "' is NULL");
  return s;
}

}  // namespace chainerc::capi
