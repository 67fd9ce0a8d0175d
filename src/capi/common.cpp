#include <new>
#include <string>

#include "api.h"
#include "capi/error_state.h"

namespace chainerc::capi {

ch_status translate_exception(const char* who) noexcept {
  ErrorState& s = error_state();
  try {
    throw;
  } catch (const CallbackFailure& e) {
    s.status = e.status();
    s.message = e.what();  // keeps the callback's payload for ch_error_take_payload
    return s.status;
  } catch (const Error& e) {
    s.status = e.status();
    try {
      s.message = e.what();
    } catch (...) {
      s.message.clear();
    }
  } catch (const std::bad_alloc&) {
    s.status = CH_ERR_OUT_OF_MEMORY;
    try {
      s.message = std::string(who) + ": out of memory";
    } catch (...) {
      s.message.clear();
    }
  } catch (const std::exception& e) {
    s.status = CH_ERR_INTERNAL;
    try {
      s.message = std::string(who) + ": internal error: " + e.what();
    } catch (...) {
      s.message.clear();
    }
  } catch (...) {
    s.status = CH_ERR_INTERNAL;
    try {
      s.message = std::string(who) + ": unknown internal error";
    } catch (...) {
      s.message.clear();
    }
  }
  s.drop_payload();
  return s.status;
}

std::vector<VarPtr> variables_of(ch_variable* const* vs, size_t n, const char* who,
                                 const char* name, const char* count) {
  if (n && !vs) fail(CH_ERR_INVALID_ARGUMENT, who, ": ", name, " is NULL with ", count, " ", n);
  std::vector<VarPtr> out;
  out.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    std::string arg = std::string(name) + "[" + std::to_string(i) + "]";
    out.push_back(variable_of(vs[i], who, arg.c_str()));
  }
  return out;
}

DType dtype_arg(ch_dtype d, const char* who) {
  if (!is_valid_dtype(d))
    fail(CH_ERR_DTYPE, who, ": dtype ", d,
         " is not one of CH_FLOAT32 (0), CH_FLOAT64 (1), CH_INT32 (2)");
  return static_cast<DType>(d);
}

DType float_dtype_arg(ch_dtype d, const char* who) {
  if (d != CH_FLOAT32 && d != CH_FLOAT64)
    fail(CH_ERR_DTYPE, who, ": dtype ", d,
         " is not supported (CH_FLOAT32 (0) or CH_FLOAT64 (1) expected)");
  return static_cast<DType>(d);
}

}  // namespace chainerc::capi

using namespace chainerc;

extern "C" {

int32_t ch_version(void) { return CH_VERSION; }
#define CH_STR2(x) #x
#define CH_STR(x) CH_STR2(x)
const char* ch_version_string(void) {
  return CH_STR(CH_VERSION_MAJOR) "." CH_STR(CH_VERSION_MINOR) "." CH_STR(CH_VERSION_PATCH);
}

ch_status ch_error_status(void) { return error_state().status; }
const char* ch_error_message(void) { return error_state().message.c_str(); }

const char* ch_status_name(ch_status status) {
  switch (status) {
    case CH_OK:
      return "CH_OK";
    case CH_ERR_INVALID_ARGUMENT:
      return "CH_ERR_INVALID_ARGUMENT";
    case CH_ERR_NULL_HANDLE:
      return "CH_ERR_NULL_HANDLE";
    case CH_ERR_RELEASED_HANDLE:
      return "CH_ERR_RELEASED_HANDLE";
    case CH_ERR_SHAPE:
      return "CH_ERR_SHAPE";
    case CH_ERR_DTYPE:
      return "CH_ERR_DTYPE";
    case CH_ERR_DEVICE:
      return "CH_ERR_DEVICE";
    case CH_ERR_OUT_OF_MEMORY:
      return "CH_ERR_OUT_OF_MEMORY";
    case CH_ERR_CALLBACK:
      return "CH_ERR_CALLBACK";
    case CH_ERR_GRAPH:
      return "CH_ERR_GRAPH";
    case CH_ERR_NOT_CLOSE:
      return "CH_ERR_NOT_CLOSE";
    case CH_ERR_IO:
      return "CH_ERR_IO";
    case CH_ERR_UNSUPPORTED:
      return "CH_ERR_UNSUPPORTED";
    case CH_ERR_INTERNAL:
      return "CH_ERR_INTERNAL";
    default:
      return "CH_ERR_UNKNOWN";
  }
}

void ch_error_set(ch_status status, const char* message) {
  ErrorState& s = error_state();
  s.status = status;
  try {
    s.message = message ? message : "";
  } catch (...) {
    s.message.clear();
  }
}

void ch_error_set_payload(void* payload, void (*destroy)(void*)) {
  ErrorState& s = error_state();
  s.drop_payload();
  s.payload = payload;
  s.destroy = destroy;
}

void* ch_error_take_payload(void) {
  ErrorState& s = error_state();
  void* p = s.payload;
  s.payload = nullptr;
  s.destroy = nullptr;
  return p;
}

int64_t ch_debug_live_handles(void) { return handle_live_count(0); }
int64_t ch_debug_live_arrays(void) {
  return handle_live_count(static_cast<int>(HandleKind::Array));
}
int64_t ch_debug_live_variables(void) {
  return handle_live_count(static_cast<int>(HandleKind::Variable));
}
int64_t ch_debug_live_functions(void) {
  return handle_live_count(static_cast<int>(HandleKind::Function));
}
void ch_debug_report_live_handles(void) { handle_report_live(); }

}  // extern "C"
