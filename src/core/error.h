// Internal error type: every failure inside chainerc is a chainerc::Error
// carrying a ch_status; the C API shims turn it into a status and message.
#pragma once

#include <ch/common.h>

#include <exception>
#include <sstream>
#include <string>
#include <utility>

namespace chainerc {

class Error : public std::exception {
 public:
  Error(ch_status status, std::string message) : status_(status), message_(std::move(message)) {}
  const char* what() const noexcept override { return message_.c_str(); }
  ch_status status() const noexcept { return status_; }

 private:
  ch_status status_;
  std::string message_;
};

namespace detail {
inline void append(std::ostringstream&) {}
template <typename T, typename... Rest>
void append(std::ostringstream& os, const T& first, const Rest&... rest) {
  os << first;
  append(os, rest...);
}
}  // namespace detail

// Throw an Error whose message is the concatenation of `parts` (streamed).
template <typename... Parts>
[[noreturn]] void fail(ch_status status, const Parts&... parts) {
  std::ostringstream os;
  detail::append(os, parts...);
  throw Error(status, os.str());
}

}  // namespace chainerc
