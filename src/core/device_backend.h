// The interface between the core and a device backend: the CPU
// (src/backend/cpu/cpu_backend.cpp) and CUDA (cuda/runtime/backend.cpp).
// src/core never includes a backend's header: copies, fills, random fills,
// gradient accumulation and (for devices other than the CPU) memory reach the
// backend of an array's device through this interface. In a build without
// CUDA, cuda_backend() is null and every CUDA request is a CH_ERR_DEVICE error.
#pragma once

#include <ch/common.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "dtype.h"

namespace chainerc {

class Array;

// A backend's stream: an opaque handle (cudaStream_t for CUDA); null means
// the device's engine stream, on which the engine's own work runs.
using StreamHandle = void*;

// A captured sequence of a device's work (a CUDA graph), replayed as a whole
// on the device's engine stream. Made by DeviceBackend::end_capture.
class DeviceGraph {
 public:
  virtual ~DeviceGraph() = default;
  virtual Device device() const = 0;
  // Queue the captured work once more (no host synchronisation).
  virtual void replay() = 0;
  // Work items recorded (kernels, copies, memsets, library calls).
  virtual int64_t size() const = 0;
};

class DeviceBackend {
 public:
  virtual ~DeviceBackend() = default;

  // Devices visible to this process; 0 (not an error) without a driver or GPU.
  virtual int32_t device_count() = 0;
  // Why device_count() is 0 (the driver/runtime's error string), or "".
  virtual std::string unavailable_reason() = 0;
  // Throws Error(CH_ERR_DEVICE) naming `who` unless `index` is a usable device.
  virtual void require_device(int32_t index, const char* who) = 0;

  // Device memory from the device's caching allocator, ordered on `stream`.
  // Throws Error(CH_ERR_OUT_OF_MEMORY) (after the OOM hook and one retry).
  virtual void* allocate(int32_t index, size_t nbytes, StreamHandle stream) = 0;
  virtual void deallocate(int32_t index, void* ptr) noexcept = 0;
  // Page-locked host memory (for asynchronous copies) and its release.
  virtual void* allocate_pinned(size_t nbytes) = 0;
  virtual void deallocate_pinned(void* ptr) noexcept = 0;

  // Copy nbytes between any two devices (CPU included). With a null stream
  // the copy is ordered with the engine's work: a copy to the host is
  // complete when copy() returns, one from the host may still be queued
  // (the source may be reused at once), one between devices is queued.
  // With a stream it is queued on it (asynchronous where the host side is
  // page-locked), after the engine's earlier work and before its later work.
  virtual void copy(void* dst, Device dst_device, const void* src, Device src_device, size_t nbytes,
                    StreamHandle stream) = 0;
  // Fresh arrays from host data: allocate on upload_stream(index), then
  // upload() (the source may be reused on return; the engine's later work
  // sees the data). Where the backend has a copy stream, the copy overlaps
  // the engine's queued work. The defaults: the engine stream, copy().
  virtual StreamHandle upload_stream(int32_t index) {
    (void)index;
    return nullptr;
  }
  virtual void upload(void* dst, int32_t index, const void* src, size_t nbytes) {
    copy(dst, Device{CH_DEVICE_CUDA, index}, src, Device{}, nbytes, nullptr);
  }
  // Set n elements of `dtype` at device memory `ptr` to `value`.
  virtual void fill(int32_t index, void* ptr, DType dtype, int64_t n, double value) = 0;
  // Fill a float array on the device from the device's cuRAND generator:
  // uniform in [a, b) (normal = false) or normal with mean a, stddev b.
  virtual void fill_random(int32_t index, void* ptr, DType dtype, int64_t n, bool normal, double a,
                           double b) = 0;

  virtual ch_memory_stats memory_stats(int32_t index) = 0;
  virtual void empty_cache(int32_t index) = 0;
  // Cap on the bytes the allocator of device `index` holds (0 = none).
  virtual void set_memory_limit(int32_t index, size_t bytes) = 0;
  virtual size_t memory_limit(int32_t index) = 0;

  // The calling thread's current device (cudaGetDevice / cudaSetDevice).
  virtual int32_t current_device() = 0;
  virtual void set_current_device(int32_t index) = 0;
  // Wait for all work on the device.
  virtual void synchronize(int32_t index) = 0;
  // Streams: a new stream on device `index` (ordered with the default
  // stream, on which the engine's work runs), waiting for it, destroying it.
  virtual StreamHandle stream_create(int32_t index) = 0;
  virtual void stream_synchronize(int32_t index, StreamHandle stream) = 0;
  virtual void stream_destroy(int32_t index, StreamHandle stream) noexcept = 0;
  // Reseed the random generator of device `index`.
  virtual void seed(int32_t index, uint64_t seed) = 0;
  // The native handle of device `index`'s engine stream (host code queues its
  // own work there to be ordered with the engine's); null where none.
  virtual StreamHandle engine_stream(int32_t index) {
    (void)index;
    return nullptr;
  }
  // Graph capture of device `index`'s engine work (CUDA graphs). The
  // defaults refuse with CH_ERR_UNSUPPORTED.
  virtual void begin_capture(int32_t index);
  virtual std::shared_ptr<DeviceGraph> end_capture(int32_t index);
  virtual bool capturing(int32_t index) {
    (void)index;
    return false;
  }

  // acc += x elementwise (float arrays of one shape and dtype on one device
  // of this backend): how backward sums the gradients a variable receives.
  // The default refuses with CH_ERR_DEVICE until the backend has the kernel.
  virtual void accumulate(Array& acc, const Array& x);
};

// The CPU backend (always present).
DeviceBackend& cpu_backend();

// The CUDA backend, or null when this build has none.
DeviceBackend* cuda_backend();

// The backend of `device` (the CPU's, or a GPU's after checking it exists).
// Throws Error(CH_ERR_DEVICE) naming `who` otherwise.
DeviceBackend& backend_for(Device device, const char* who);

}  // namespace chainerc

namespace chainerc {

// Copy nbytes from `src` on `src_device` to `dst` on `dst_device` (memcpy
// between CPU buffers; the device's backend otherwise). Null stream: complete
// on return. Throws Error(CH_ERR_DEVICE) for a missing device.
void copy_bytes(void* dst, Device dst_device, const void* src, Device src_device, size_t nbytes,
                StreamHandle stream = nullptr);

}  // namespace chainerc
