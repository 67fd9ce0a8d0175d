// The per-thread last error behind ch_error_message(), and the payload a
// user callback may attach to carry a host-language error object.
#pragma once

#include "error.h"

#include <string>

namespace chainerc {

struct ErrorState {
  ch_status status = CH_OK;
  std::string message;
  void* payload = nullptr;
  void (*destroy)(void*) = nullptr;

  void drop_payload() noexcept;
  ~ErrorState() { drop_payload(); }
};

ErrorState& error_state() noexcept;

// An error raised because a user callback failed. Unlike other errors it
// leaves the callback's payload in the error state for the API caller.
class CallbackFailure : public Error {
 public:
  using Error::Error;
};

// Forget any error a callback may see as its own before calling it.
void clear_error_for_callback() noexcept;
// Throw CallbackFailure for a callback of function `name` that returned
// `status` in `phase`, with the message it recorded.
[[noreturn]] void raise_callback_failure(const char* name, const char* phase, ch_status status);

}  // namespace chainerc
