// Shared by the extern "C" shims: every body runs inside one catch-all that
// turns any C++ exception into a status and a message, so nothing crosses
// the ABI.
#pragma once

#include <ch/ch.h>

#include <memory>
#include <vector>

#include "capi/handles.h"
#include "core/array.h"
#include "core/error.h"
#include "core/variable.h"

namespace chainerc::capi {

// Record the exception in flight as this thread's last error; return its status.
ch_status translate_exception(const char* who) noexcept;

template <typename T>
void require_out(T** out, const char* who) {
  if (!out) fail(CH_ERR_INVALID_ARGUMENT, who, ": the output pointer 'out' is NULL");
  *out = nullptr;
}

inline const Array& array_of(const ch_array* h, const char* who, const char* arg) {
  return handle_object<Array>(h, HandleKind::Array, who, arg);
}
// An array the call writes into: what reads it first (Buffer::before_write).
inline Array& mutable_array_of(ch_array* h, const char* who, const char* arg) {
  Array& a = handle_object<Array>(h, HandleKind::Array, who, arg);
  if (a.buffer()) a.buffer()->before_write();
  return a;
}
inline VarPtr variable_of(const ch_variable* h, const char* who, const char* arg) {
  return handle_shared<VariableImpl>(h, HandleKind::Variable, who, arg);
}
inline FuncPtr function_of(const ch_function* h, const char* who, const char* arg) {
  return handle_shared<Function>(h, HandleKind::Function, who, arg);
}

// The variables of an argument `name` of n handles, `count` naming n in the
// messages: CH_ERR_INVALID_ARGUMENT when it is NULL with n > 0; each handle
// checked as `name[i]`.
std::vector<VarPtr> variables_of(ch_variable* const* vs, size_t n, const char* who,
                                 const char* name, const char* count);

// A dtype argument: any ch_dtype (dtype_arg) or a float one (float_dtype_arg);
// Error(CH_ERR_DTYPE) naming `who` and the value otherwise.
DType dtype_arg(ch_dtype d, const char* who);
DType float_dtype_arg(ch_dtype d, const char* who);

inline ch_array* new_array_handle(Array a) {
  return static_cast<ch_array*>(
      handle_new(HandleKind::Array, std::make_shared<Array>(std::move(a))));
}
inline ch_variable* new_variable_handle(VarPtr v) {
  return static_cast<ch_variable*>(handle_new(HandleKind::Variable, std::move(v)));
}
inline ch_function* new_function_handle(FuncPtr f) {
  return static_cast<ch_function*>(handle_new(HandleKind::Function, std::move(f)));
}

}  // namespace chainerc::capi

#define CH_API_BEGIN try {
#define CH_API_END                                          \
  }                                                         \
  catch (...) {                                             \
    return ::chainerc::capi::translate_exception(__func__); \
  }                                                         \
  return CH_OK;
