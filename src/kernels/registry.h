// The kernel interface: each op group declares its kernels once, device-free,
// in src/kernels/<group>.h as Kernel objects; each backend fills them with its
// implementations from an explicit list (src/backend/cpu/kernel_list.cpp, and
// the CUDA backend's own list), never by static self-registration, which a
// static link into libchainerc.a would drop. An op calls a kernel like a
// function; the kernel is found by the device of its first Array argument:
//
//   kernels::relu(x, y);   // x, y on the same device
//
// A device without an implementation is refused with CH_ERR_DEVICE naming the
// kernel and the device.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/array.h"
#include "core/error.h"

namespace chainerc::kernels {

// Device types with kernel tables (CH_DEVICE_CPU = 1, CH_DEVICE_CUDA = 2).
constexpr int kMaxDeviceType = CH_DEVICE_CUDA;

// Fills every kernel table from the backends' lists, once per process
// (src/backend/kernel_lists.cpp). Called on the first lookup that misses.
void register_all_kernels();

namespace detail {
[[noreturn]] void no_kernel(const char* kernel, Device device);

// The device of the first Array among the arguments.
template <typename First, typename... Rest>
Device device_of(const First& first, const Rest&... rest) {
  if constexpr (std::is_same_v<std::decay_t<First>, Array>) {
    return first.device();
  } else {
    static_assert(sizeof...(Rest) > 0, "a kernel call needs an Array argument");
    return device_of(rest...);
  }
}
// A kernel writes its `Array&` arguments (and `std::vector<Array>&`): the
// deferred values that read those buffers are computed first
// (Buffer::before_write; one atomic load each when none does).
template <typename Declared, typename Actual>
void before_write_if_output(const Actual& arg) {
  if constexpr (std::is_same_v<Declared, Array&>) {
    if (arg.buffer()) arg.buffer()->before_write();
  } else if constexpr (std::is_same_v<Declared, std::vector<Array>&>) {
    for (const Array& a : arg)
      if (a.buffer()) a.buffer()->before_write();
  }
}

// Empty arrays: a kernel all of whose arrays have no elements has nothing to
// read and nothing to write, whatever extents multiply to that zero. Such a
// call is skipped, so that no kernel walks the 2**40 empty rows of a
// (2**40, C, 0) array. Only for kernels that can write nothing but their
// arrays (no other non-const reference or pointer argument) and return void.
template <typename Declared>
constexpr bool writes_outside_arrays() {
  using T = std::remove_reference_t<Declared>;
  using D = std::remove_cv_t<T>;
  if (std::is_same_v<D, Array> || std::is_same_v<D, std::vector<Array>>) return false;
  if (std::is_lvalue_reference_v<Declared> && !std::is_const_v<T>) return true;
  if constexpr (std::is_pointer_v<D>) return !std::is_const_v<std::remove_pointer_t<D>>;
  return false;
}
// 1: a defined array with elements; 0: only empty ones; -1: no array at all.
template <typename A>
int has_elements(const A& arg) {
  using D = std::decay_t<A>;
  if constexpr (std::is_same_v<D, Array>) {
    return arg.defined() ? (arg.shape().size() != 0 ? 1 : 0) : -1;
  } else if constexpr (std::is_same_v<D, std::vector<Array>>) {
    int r = -1;
    for (const Array& a : arg)
      if (a.defined()) r = std::max(r, a.shape().size() != 0 ? 1 : 0);
    return r;
  } else {
    return -1;
  }
}
template <typename... A>
bool all_arrays_empty(const A&... args) {
  int r = -1;
  ((r = std::max(r, has_elements(args))), ...);
  return r == 0;
}
}  // namespace detail

// What every kernel answers whatever its signature: its name and whether a
// device type has an implementation. Every Kernel object is listed in
// all_kernels() (for tests and diagnostics).
class KernelBase {
 public:
  explicit KernelBase(const char* name);
  virtual ~KernelBase() = default;
  KernelBase(const KernelBase&) = delete;
  KernelBase& operator=(const KernelBase&) = delete;
  const char* name() const { return name_; }
  // Whether devices of `device_type` have an implementation (after the
  // backends' lists have run).
  virtual bool implemented_for(int32_t device_type) const = 0;

 private:
  const char* name_;
};
// Every kernel of the kernel interface, in no particular order.
std::vector<const KernelBase*> all_kernels();

template <typename Signature>
class Kernel;

template <typename R, typename... Args>
class Kernel<R(Args...)> final : public KernelBase {
 public:
  using Fn = R (*)(Args...);

  explicit Kernel(const char* name) : KernelBase(name) {}

  // A backend's implementation for devices of `device_type`.
  void set(int32_t device_type, Fn fn) { slot(device_type).store(fn, std::memory_order_release); }

  // The implementation set so far for `device_type` (null if none), without
  // running the backends' lists: for a backend that wraps the implementation
  // registered before it (cuda/cudnn/ keeps chainerc's own CUDA kernels).
  Fn get(int32_t device_type) const {
    if (device_type < 1 || device_type > kMaxDeviceType) return nullptr;
    return slot(device_type).load(std::memory_order_acquire);
  }

  // The implementation for `device`, or Error(CH_ERR_DEVICE) naming the kernel.
  Fn find(Device device) const {
    if (device.type < 1 || device.type > kMaxDeviceType) detail::no_kernel(name(), device);
    Fn fn = slot(device.type).load(std::memory_order_acquire);
    if (fn) return fn;
    register_all_kernels();
    fn = slot(device.type).load(std::memory_order_acquire);
    if (!fn) detail::no_kernel(name(), device);
    return fn;
  }
  bool implemented_for(int32_t device_type) const override {
    if (device_type < 1 || device_type > kMaxDeviceType) return false;
    register_all_kernels();
    return slot(device_type).load(std::memory_order_acquire) != nullptr;
  }

  static constexpr bool kSkipsEmpty =
      std::is_void_v<R> && !(detail::writes_outside_arrays<Args>() || ...);

  // Runs the implementation for the device of the first Array argument.
  template <typename... A>
  R operator()(A&&... args) const {
    const Fn fn = find(detail::device_of(args...));
    if constexpr (kSkipsEmpty)
      if (detail::all_arrays_empty(args...)) return;
    (detail::before_write_if_output<Args>(args), ...);
    return fn(std::forward<A>(args)...);
  }
  // Runs the implementation for an explicit device.
  template <typename... A>
  R on(Device device, A&&... args) const {
    const Fn fn = find(device);
    if constexpr (kSkipsEmpty)
      if (detail::all_arrays_empty(args...)) return;
    (detail::before_write_if_output<Args>(args), ...);
    return fn(std::forward<A>(args)...);
  }

 private:
  std::atomic<Fn>& slot(int32_t type) const { return impl_[static_cast<size_t>(type - 1)]; }
  mutable std::array<std::atomic<Fn>, kMaxDeviceType> impl_{};
};

// Common signatures.
using UnaryFn = void(const Array& x, Array& y);                   // y = f(x)
using UnaryScalarFn = void(const Array& x, double s, Array& y);   // y = f(x, s)
using BinaryFn = void(const Array& a, const Array& b, Array& y);  // y = f(a, b), same shape
using BinaryScalarFn = void(const Array& a, const Array& b, double s, Array& y);

}  // namespace chainerc::kernels
