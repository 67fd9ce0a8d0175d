#include "stream.h"

#include "error.h"

namespace chainerc {

Stream::Stream(Device device, const char* who) : device_(device) {
  if (device.type != CH_DEVICE_CUDA)
    fail(CH_ERR_DEVICE, who, ": streams are on CUDA devices, not on ", device.to_string());
  native_ = backend_for(device, who).stream_create(device.index);
}

Stream::~Stream() {
  // Waits for the stream's work before its buffers go.
  if (native_) cuda_backend()->stream_destroy(device_.index, native_);
}

void Stream::copy_async(const Array& dst, const Array& src, const char* who) {
  if (dst.dtype() != src.dtype() || dst.size() != src.size())
    fail(CH_ERR_SHAPE, who, ": cannot copy a ", src.describe(), " into a ", dst.describe());
  Device cuda_side = dst.device().is_cpu() ? src.device() : dst.device();
  if (cuda_side.is_cpu())
    fail(CH_ERR_DEVICE, who,
         ": both arrays are on the CPU; asynchronous copies involve a CUDA device");
  if (cuda_side != device_)
    fail(CH_ERR_DEVICE, who, ": the stream is on ", device_.to_string(),
         " but the copy's CUDA side is ", cuda_side.to_string());
  {
    std::lock_guard<std::mutex> lock(mutex_);
    keep_alive_.push_back(src.buffer());
    keep_alive_.push_back(dst.buffer());
  }
  copy_bytes(dst.raw(), dst.device(), src.raw(), src.device(), src.nbytes(), native_);
}

void Stream::synchronize() {
  cuda_backend()->stream_synchronize(device_.index, native_);
  std::vector<std::shared_ptr<Buffer>> done;
  std::lock_guard<std::mutex> lock(mutex_);
  done.swap(keep_alive_);
}

namespace {
// Each thread's pushed devices (to restore on pop).
thread_local std::vector<int32_t> t_device_stack;
}  // namespace

void push_device(int32_t index, const char* who) {
  DeviceBackend& b = backend_for(Device{CH_DEVICE_CUDA, index}, who);
  int32_t previous = b.current_device();
  t_device_stack.reserve(t_device_stack.size() + 1);
  b.set_current_device(index);
  t_device_stack.push_back(previous);
}

void pop_device(const char* who) {
  if (t_device_stack.empty())
    fail(CH_ERR_INVALID_ARGUMENT, who, ": no device was pushed on this thread");
  int32_t previous = t_device_stack.back();
  backend_for(Device{CH_DEVICE_CUDA, previous}, who).set_current_device(previous);
  t_device_stack.pop_back();
}

}  // namespace chainerc
