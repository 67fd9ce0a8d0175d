#include "error_state.h"

namespace chainerc {

void ErrorState::drop_payload() noexcept {
  // Detach first: destroy is host code and may call the API, and a failing
  // call there drops the payload again.
  void* p = payload;
  void (*d)(void*) = destroy;
  payload = nullptr;
  destroy = nullptr;
  if (p && d) d(p);
}

ErrorState& error_state() noexcept {
  thread_local ErrorState state;
  return state;
}

namespace {
void move_state(ErrorState& to, ErrorState& from) noexcept {
  to.status = from.status;
  to.message.swap(from.message);
  to.payload = from.payload;
  to.destroy = from.destroy;
  from.status = CH_OK;
  from.message.clear();
  from.payload = nullptr;
  from.destroy = nullptr;
}
}  // namespace

CallbackErrorScope::CallbackErrorScope() noexcept { move_state(saved_, error_state()); }

CallbackErrorScope::~CallbackErrorScope() {
  ErrorState& s = error_state();
  if (keep_) {
    // The callback's error wins. Destroying the caller's old payload runs host
    // code that may set errors of its own: keep the callback's error aside.
    ErrorState callback;
    move_state(callback, s);
    saved_.drop_payload();
    s.drop_payload();
    move_state(s, callback);
  } else {
    s.drop_payload();  // a payload set by a callback that then succeeded
    move_state(s, saved_);
  }
}

void raise_callback_failure_of(const std::string& subject, const std::string& where,
                               ch_status status) {
  ErrorState& s = error_state();
  std::string what = s.message.empty() ? "the callback returned status " + std::to_string(status) +
                                             " without a message"
                                       : s.message;
  throw CallbackFailure(CH_ERR_CALLBACK, subject + " failed in " + where + ": " + what);
}

void raise_callback_failure(const char* name, const char* phase, ch_status status) {
  raise_callback_failure_of(std::string("function '") + name + "'", phase, status);
}

}  // namespace chainerc
