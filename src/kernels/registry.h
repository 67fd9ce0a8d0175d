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

  // Runs the implementation for the device of the first Array argument.
  template <typename... A>
  R operator()(A&&... args) const {
    const Fn fn = find(detail::device_of(args...));
    (detail::before_write_if_output<Args>(args), ...);
    return fn(std::forward<A>(args)...);
  }
  // Runs the implementation for an explicit device.
  template <typename... A>
  R on(Device device, A&&... args) const {
    const Fn fn = find(device);
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
