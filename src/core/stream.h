// Streams and the per-thread device scope: the engine's view of a backend's
// stream (kernels will be queued on it) and of the device a thread pushed.
#pragma once

#include <memory>
#include <mutex>
#include <vector>

#include "array.h"
#include "device_backend.h"

namespace chainerc {

// A backend stream on one device and the buffers its queued copies use,
// kept until the stream is synchronized (or destroyed, which waits for it).
class Stream {
 public:
  // A new stream on `device` (a CUDA device); Error(CH_ERR_DEVICE) otherwise.
  explicit Stream(Device device, const char* who);
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  Device device() const { return device_; }
  StreamHandle native() const { return native_; }

  // Queue a copy of src into dst (same dtype and size; one side on this
  // stream's device, the other on the CPU or the same device).
  void copy_async(const Array& dst, const Array& src, const char* who);
  // Wait for the queued work, then drop the buffers it used.
  void synchronize();

 private:
  Device device_;
  StreamHandle native_ = nullptr;
  std::mutex mutex_;
  std::vector<std::shared_ptr<Buffer>> keep_alive_;
};

// The calling thread's device scope: push makes CUDA device `index` current
// and remembers the previous one; pop restores it (Error if none was pushed).
void push_device(int32_t index, const char* who);
void pop_device(const char* who);

}  // namespace chainerc
