#include "error_state.h"

namespace chainerc {

void ErrorState::drop_payload() noexcept {
  if (payload && destroy) destroy(payload);
  payload = nullptr;
  destroy = nullptr;
}

ErrorState& error_state() noexcept {
  thread_local ErrorState state;
  return state;
}

void clear_error_for_callback() noexcept {
  ErrorState& s = error_state();
  s.status = CH_OK;
  s.message.clear();
  s.drop_payload();
}

void raise_callback_failure(const char* name, const char* phase, ch_status status) {
  ErrorState& s = error_state();
  std::string what = s.message.empty()
                         ? "the callback returned status " + std::to_string(status) + " without a message"
                         : s.message;
  throw CallbackFailure(CH_ERR_CALLBACK, std::string("function '") + name + "' failed in " + phase + ": " + what);
}

}  // namespace chainerc
