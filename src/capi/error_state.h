// The per-thread last error behind ch_error_message(), and the payload a
// user callback may attach to carry a host-language error object.
#pragma once

#include <string>

#include "core/error.h"

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

// Around one user callback: the callback starts with a clean error state (so
// an old message is never taken for its own), and afterwards the thread's
// last error is the caller's again unless the callback failed, in which case
// the callback's error replaces it (and the old payload is destroyed).
class CallbackErrorScope {
 public:
  CallbackErrorScope() noexcept;
  ~CallbackErrorScope();
  CallbackErrorScope(const CallbackErrorScope&) = delete;
  CallbackErrorScope& operator=(const CallbackErrorScope&) = delete;
  // The callback failed: its error stays when the scope ends.
  void keep_callback_error() noexcept { keep_ = true; }

 private:
  ErrorState saved_;
  bool keep_ = false;
};
// Throw CallbackFailure for a callback of function `name` that returned
// `status` in `phase`, with the message it recorded.
[[noreturn]] void raise_callback_failure(const char* name, const char* phase, ch_status status);
// The same for any callback owner: "<subject> failed in <where>: <message>".
[[noreturn]] void raise_callback_failure_of(const std::string& subject, const std::string& where,
                                            ch_status status);

// Call a user callback (returning ch_status) inside a CallbackErrorScope;
// throw CallbackFailure naming `name` and `phase` if it fails.
template <typename Call>
void invoke_callback(const char* name, const char* phase, Call&& call) {
  CallbackErrorScope errors;
  ch_status st = call();
  if (st != CH_OK) {
    errors.keep_callback_error();
    raise_callback_failure(name, phase, st);
  }
}

}  // namespace chainerc
