// chainerc's C++ API: errors (ch::Error, ch::check), the RAII handle base,
// ch::Shape, ch::debug (over <ch/common.h>).
// Part of <ch/ch.hpp>, which says what the C++ layer adds, how exceptions and
// callbacks behave and the threading contract; header-only.
#ifndef CH_COMMON_HPP
#define CH_COMMON_HPP

#include <ch/ch.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <ostream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <unordered_set>
#include <utility>
#include <vector>

namespace ch {
/// Extents of an array, outermost first. An empty shape is a 0-d (scalar) array.
using Shape = std::vector<int64_t>;

// ===========================================================================================
// Errors
// ===========================================================================================

/// A failed chainerc call: its status (CH_ERR_*) and the library's message.
class Error : public std::runtime_error {
 public:
  /// An error of `status` with `message`. `foreign_payload` is a payload some non-C++
  /// callback attached with ch_error_set_payload; see foreign_payload().
  Error(ch_status status, const std::string& message, void* foreign_payload = nullptr)
      : std::runtime_error(message), status_(status), foreign_payload_(foreign_payload) {}

  /// The status code, e.g. CH_ERR_SHAPE.
  ch_status status() const noexcept { return status_; }
  /// The status code's name, e.g. "CH_ERR_SHAPE".
  const char* status_name() const noexcept { return ch_status_name(status_); }
  /// A payload attached by a callback not written with this header (a C callback's own
  /// object), or nullptr. Ownership passed to whoever handles this error: ch.hpp never
  /// frees it, because the C API does not say how (its destroy function is not returned).
  void* foreign_payload() const noexcept { return foreign_payload_; }

 private:
  ch_status status_;
  void* foreign_payload_;
};

namespace detail {

// Payloads made by this header: a heap std::exception_ptr. The registry tells them apart
// from payloads of other callbacks without dereferencing unknown pointers. It is never
// destroyed, so a payload freed by the library at thread exit can still unregister.
struct ExceptionPayload {
  std::exception_ptr exception;
};

struct PayloadRegistry {
  std::mutex mutex;
  std::unordered_set<void*> live;
};

inline PayloadRegistry& payload_registry() {
  static PayloadRegistry* registry = new PayloadRegistry;  // intentionally never freed
  return *registry;
}

inline void destroy_exception_payload(void* payload) {
  {
    PayloadRegistry& r = payload_registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    r.live.erase(payload);
  }
  delete static_cast<ExceptionPayload*>(payload);
}

// Attach the exception in flight to the error a callback is about to report.
inline void attach_current_exception() noexcept {
  try {
    auto* payload = new ExceptionPayload{std::current_exception()};
    {
      PayloadRegistry& r = payload_registry();
      std::lock_guard<std::mutex> lock(r.mutex);
      r.live.insert(payload);
    }
    ch_error_set_payload(payload, &destroy_exception_payload);
  } catch (...) {
    // Out of memory: the message set with ch_error_set still describes the failure.
  }
}

// Take this thread's error payload: the C++ exception it carries, or nullptr (then
// `foreign` receives a payload that is not ours, if any).
inline std::exception_ptr take_exception_payload(void** foreign) {
  *foreign = nullptr;
  void* payload = ch_error_take_payload();
  if (!payload) return nullptr;
  bool ours;
  {
    PayloadRegistry& r = payload_registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    ours = r.live.erase(payload) > 0;
  }
  if (!ours) {
    *foreign = payload;
    return nullptr;
  }
  std::unique_ptr<ExceptionPayload> owned(static_cast<ExceptionPayload*>(payload));
  return owned->exception;
}

}  // namespace detail

/// Turn a status into an exception: does nothing for CH_OK. Otherwise, if the failure
/// came from a C++ callback that threw, rethrows that exception object (original type and
/// message); else throws ch::Error with the status and ch_error_message().
/// This is the only place where a ch_status becomes an exception.
inline void check(ch_status status) {
  if (status == CH_OK) return;
  void* foreign = nullptr;
  std::exception_ptr cause = detail::take_exception_payload(&foreign);
  if (cause) std::rethrow_exception(cause);
  throw Error(status, ch_error_message(), foreign);
}

namespace detail {

// Report a failure detected on the C++ side (never a status returned by the library).
[[noreturn]] inline void fail(ch_status status, const std::string& message) {
  throw Error(status, message);
}

// Run a callback body: CH_OK, or the status of the exception it threw, with its message
// recorded by ch_error_set and the exception attached as the payload. Never throws.
template <class Body>
ch_status guard(Body&& body) noexcept {
  ch_status status = CH_ERR_CALLBACK;
  try {
    body();
    return CH_OK;
  } catch (const Error& e) {  // attach inside each handler: current_exception() needs one
    if (e.status() != CH_OK) status = e.status();
    ch_error_set(status, e.what());
    attach_current_exception();
  } catch (const std::exception& e) {
    ch_error_set(status, e.what());
    attach_current_exception();
  } catch (...) {
    ch_error_set(status, "a C++ exception of a type not derived from std::exception");
    attach_current_exception();
  }
  return status;
}

inline std::string shape_string(const Shape& shape) {
  std::ostringstream os;
  os << '(';
  for (size_t i = 0; i < shape.size(); ++i) os << (i ? ", " : "") << shape[i];
  if (shape.size() == 1) os << ',';
  os << ')';
  return os.str();
}

inline int64_t shape_size(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

inline int32_t shape_ndim(const Shape& shape) {
  if (shape.size() > CH_MAX_NDIM)
    fail(CH_ERR_SHAPE, "shape " + shape_string(shape) + " has more than " +
                           std::to_string(CH_MAX_NDIM) + " dimensions");
  return static_cast<int32_t>(shape.size());
}

// A reference-counted handle: copy retains, destruction releases.
template <class T, T* (*Retain)(T*), ch_status (*Release)(T*)>
class Handle {
 public:
  Handle() noexcept = default;
  Handle(const Handle& other) noexcept : h_(other.h_ ? Retain(other.h_) : nullptr) {}
  Handle(Handle&& other) noexcept : h_(std::exchange(other.h_, nullptr)) {}
  Handle& operator=(const Handle& other) noexcept {
    if (this != &other) reset(other.h_ ? Retain(other.h_) : nullptr);
    return *this;
  }
  Handle& operator=(Handle&& other) noexcept {
    if (this != &other) reset(std::exchange(other.h_, nullptr));
    return *this;
  }
  ~Handle() { reset(); }

  /// The C handle, borrowed: valid while this object holds it.
  T* get() const noexcept { return h_; }
  /// Give up the reference without releasing it: the caller now owns it.
  T* release() noexcept { return std::exchange(h_, nullptr); }
  /// Drop the reference (if any) and hold `h` instead, adopting its reference.
  void reset(T* h = nullptr) noexcept {
    T* old = std::exchange(h_, h);
    if (old) Release(old);
  }
  /// Whether this object holds a handle.
  bool valid() const noexcept { return h_ != nullptr; }
  explicit operator bool() const noexcept { return h_ != nullptr; }

 protected:
  explicit Handle(T* adopted) noexcept : h_(adopted) {}

 private:
  T* h_ = nullptr;
};

}  // namespace detail

// ===========================================================================================
// Debugging
// ===========================================================================================

namespace debug {
/// Live handles of every kind, and per kind (for leak checks).
inline int64_t live_handles() noexcept { return ch_debug_live_handles(); }
inline int64_t live_arrays() noexcept { return ch_debug_live_arrays(); }
inline int64_t live_variables() noexcept { return ch_debug_live_variables(); }
inline int64_t live_functions() noexcept { return ch_debug_live_functions(); }
/// Print every live handle to stderr.
inline void report_live_handles() noexcept { ch_debug_report_live_handles(); }
}  // namespace debug

}  // namespace ch

#endif  // CH_COMMON_HPP
