// chainerc's C++ API: ch::gpu and ch::memory: CUDA devices,
// streams and device memory (over <ch/cuda.h>).
// Part of <ch/ch.hpp>, which says what the C++ layer adds, how exceptions and
// callbacks behave and the threading contract; header-only.
#ifndef CH_CUDA_HPP
#define CH_CUDA_HPP

#include <ch/array.hpp>

namespace ch {
// ===========================================================================================
// CUDA devices, streams and device memory (<ch/cuda.h>)
// ===========================================================================================

namespace gpu {
/// Number of usable CUDA devices (0 without the backend, a driver or a GPU).
inline int32_t device_count() noexcept { return ch_cuda_device_count(); }
/// Why device_count() is 0 ("" when devices are there).
inline std::string unavailable_reason() { return ch_cuda_unavailable_reason(); }
/// The calling thread's current CUDA device.
inline int32_t current_device() {
  int32_t out = 0;
  check(ch_cuda_current_device(&out));
  return out;
}
/// Wait for all work on device `index`.
inline void synchronize(int32_t index) { check(ch_cuda_synchronize(index)); }
/// Reseed device `index`'s generator (-1: every device) as CH_SEED=seed would.
inline void seed(int32_t index, uint64_t seed) { check(ch_cuda_seed(index, seed)); }

/// Makes a device current on this thread for a scope (the seed's cuda.using_device):
///   { ch::gpu::DeviceScope on(1); ... }
class DeviceScope {
 public:
  explicit DeviceScope(int32_t index) { check(ch_cuda_device_push(index)); }
  ~DeviceScope() { ch_cuda_device_pop(); }
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;
};
}  // namespace gpu

/// A CUDA stream (ch_stream), ordered with the device's default stream. A handle: copies
/// share the stream; the last one waits for its work and destroys it.
class Stream : public detail::Handle<ch_stream, ch_stream_retain, ch_stream_release> {
 public:
  Stream() noexcept = default;
  /// A new stream on CUDA device `device`.
  explicit Stream(ch_device device) {
    ch_stream* out = nullptr;
    check(ch_stream_new(&out, device));
    reset(out);
  }
  /// Wait for the stream's work; drops the arrays its copies kept alive.
  void synchronize() { check(ch_stream_synchronize(get())); }
  ch_device device() const noexcept { return ch_stream_device(get()); }
  /// The cudaStream_t (borrowed).
  void* native() const noexcept { return ch_stream_native(get()); }
};

/// A copy of `a` on `device` queued on `stream` (a CPU result is page-locked); read it
/// only after stream.synchronize().
inline Array to_device_async(const Array& a, ch_device device, Stream& stream) {
  ch_array* out = nullptr;
  check(ch_array_to_device_async(&out, a.get(), device, stream.get()));
  return Array::adopt(out);
}
/// Copy `src` into `dst` on `stream`.
inline void copy_async(Array& dst, const Array& src, Stream& stream) {
  check(ch_array_copy_from_async(dst.get(), src.get(), stream.get()));
}

namespace memory {
/// Statistics of `device`'s caching allocator.
inline ch_memory_stats stats(ch_device device) {
  ch_memory_stats out{};
  check(ch_memory_stats_get(&out, device));
  return out;
}
/// Return `device`'s cached blocks.
inline void empty_cache(ch_device device) { check(ch_memory_empty_cache(device)); }
/// Cap the bytes a CUDA device's allocator holds (0 = none).
inline void set_limit(ch_device device, size_t bytes) { check(ch_memory_set_limit(device, bytes)); }
inline size_t limit(ch_device device) {
  size_t out = 0;
  check(ch_memory_limit(&out, device));
  return out;
}
/// The process-wide out-of-memory hook (see ch_memory_set_oom_hook); nullptr removes it.
inline void set_oom_hook(ch_oom_hook hook, void* user_data) noexcept {
  ch_memory_set_oom_hook(hook, user_data);
}
}  // namespace memory

}  // namespace ch

#endif  // CH_CUDA_HPP
