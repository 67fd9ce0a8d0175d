// C API: CUDA devices, the current device, streams, page-locked memory and
// asynchronous copies (include/ch/cuda.h). Everything goes through the core's
// DeviceBackend, so this file builds with and without the CUDA backend.
#include <mutex>
#include <string>
#include <vector>

#include "api.h"
#include "core/device_backend.h"

using namespace chainerc;
using namespace chainerc::capi;

namespace {

DeviceBackend& cuda_device(int32_t index, const char* who) {
  return backend_for(Device{CH_DEVICE_CUDA, index}, who);
}

// A stream and the buffers its queued copies use (kept until synchronized).
struct StreamObject {
  Device device;
  StreamHandle native = nullptr;
  std::mutex mutex;
  std::vector<std::shared_ptr<Buffer>> keep_alive;

  ~StreamObject() {
    // Waits for the stream's work before its buffers go.
    if (native) cuda_backend()->stream_destroy(device.index, native);
  }
  void keep(const Array& a) {
    std::lock_guard<std::mutex> lock(mutex);
    keep_alive.push_back(a.buffer());
  }
};

StreamObject& stream_of(const ch_stream* h, const char* who) {
  return handle_object<StreamObject>(h, HandleKind::Stream, who, "stream");
}

// Each thread's pushed devices (to restore on pop).
thread_local std::vector<int32_t> t_device_stack;

// Queue a copy of src into dst on `s` after checking the devices.
void copy_async(const Array& dst, const Array& src, StreamObject& s, const char* who) {
  if (dst.dtype() != src.dtype() || dst.size() != src.size())
    fail(CH_ERR_SHAPE, who, ": cannot copy a ", src.describe(), " into a ", dst.describe());
  Device cuda_side = dst.device().is_cpu() ? src.device() : dst.device();
  if (cuda_side.is_cpu())
    fail(CH_ERR_DEVICE, who,
         ": both arrays are on the CPU; asynchronous copies involve a CUDA device");
  if (cuda_side != s.device)
    fail(CH_ERR_DEVICE, who, ": the stream is on ", s.device.to_string(),
         " but the copy's CUDA side is ", cuda_side.to_string());
  s.keep(src);
  s.keep(dst);
  copy_bytes(dst.raw(), dst.device(), src.raw(), src.device(), src.nbytes(), s.native);
}

}  // namespace

extern "C" {

int32_t ch_cuda_device_count(void) {
  try {
    DeviceBackend* b = cuda_backend();
    return b ? b->device_count() : 0;
  } catch (...) {
    return 0;
  }
}

const char* ch_cuda_unavailable_reason(void) {
  thread_local std::string reason;
  try {
    DeviceBackend* b = cuda_backend();
    reason = b ? b->unavailable_reason() : "this build of chainerc has no CUDA backend";
  } catch (...) {
    reason = "unknown";
  }
  return reason.c_str();
}

ch_device ch_device_cuda(int32_t index) { return ch_device{CH_DEVICE_CUDA, index}; }

ch_status ch_cuda_current_device(int32_t* out) {
  CH_API_BEGIN
  if (!out) fail(CH_ERR_INVALID_ARGUMENT, __func__, ": the output pointer 'out' is NULL");
  *out = 0;
  DeviceBackend& b = cuda_device(0, __func__);
  *out = b.current_device();
  CH_API_END
}

ch_status ch_cuda_device_push(int32_t index) {
  CH_API_BEGIN
  DeviceBackend& b = cuda_device(index, __func__);
  int32_t previous = b.current_device();
  t_device_stack.reserve(t_device_stack.size() + 1);
  b.set_current_device(index);
  t_device_stack.push_back(previous);
  CH_API_END
}

ch_status ch_cuda_device_pop(void) {
  CH_API_BEGIN
  if (t_device_stack.empty())
    fail(CH_ERR_INVALID_ARGUMENT, __func__, ": no device was pushed on this thread");
  int32_t previous = t_device_stack.back();
  cuda_device(previous, __func__).set_current_device(previous);
  t_device_stack.pop_back();
  CH_API_END
}

ch_status ch_cuda_synchronize(int32_t index) {
  CH_API_BEGIN
  cuda_device(index, __func__).synchronize(index);
  CH_API_END
}

ch_status ch_cuda_seed(int32_t index, uint64_t seed) {
  CH_API_BEGIN
  if (index == -1) {
    DeviceBackend& b = cuda_device(0, __func__);
    for (int32_t i = 0, n = b.device_count(); i < n; ++i) b.seed(i, seed);
  } else {
    cuda_device(index, __func__).seed(index, seed);
  }
  CH_API_END
}

ch_status ch_stream_new(ch_stream** out, ch_device device) {
  CH_API_BEGIN
  require_out(out, __func__);
  Device d = Device::from_c(device);
  if (d.type != CH_DEVICE_CUDA)
    fail(CH_ERR_DEVICE, __func__, ": streams are on CUDA devices, not on ", d.to_string());
  DeviceBackend& b = cuda_device(d.index, __func__);
  auto s = std::make_shared<StreamObject>();
  s->device = d;
  s->native = b.stream_create(d.index);
  *out = static_cast<ch_stream*>(handle_new(HandleKind::Stream, std::move(s)));
  CH_API_END
}

ch_status ch_stream_synchronize(ch_stream* stream) {
  CH_API_BEGIN
  StreamObject& s = stream_of(stream, __func__);
  cuda_backend()->stream_synchronize(s.device.index, s.native);
  std::vector<std::shared_ptr<Buffer>> done;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    done.swap(s.keep_alive);
  }
  CH_API_END
}

ch_stream* ch_stream_retain(ch_stream* stream) {
  return handle_retain(stream, HandleKind::Stream) ? stream : nullptr;
}

ch_status ch_stream_release(ch_stream* stream) {
  CH_API_BEGIN
  handle_release(stream, HandleKind::Stream, __func__);
  CH_API_END
}

ch_device ch_stream_device(const ch_stream* stream) {
  const std::shared_ptr<void>* p = handle_find(stream, HandleKind::Stream);
  return p ? static_cast<const StreamObject*>(p->get())->device.to_c() : ch_device{0, 0};
}

void* ch_stream_native(const ch_stream* stream) {
  const std::shared_ptr<void>* p = handle_find(stream, HandleKind::Stream);
  return p ? static_cast<const StreamObject*>(p->get())->native : nullptr;
}

ch_status ch_array_new_pinned(ch_array** out, ch_dtype dtype, const int64_t* shape, int32_t ndim) {
  CH_API_BEGIN
  require_out(out, __func__);
  if (!is_valid_dtype(dtype))
    fail(CH_ERR_DTYPE, __func__, ": dtype ", dtype,
         " is not one of CH_FLOAT32 (0), CH_FLOAT64 (1), CH_INT32 (2)");
  DType dt = static_cast<DType>(dtype);
  Shape s = Shape::from_c(shape, ndim, __func__);
  size_t nbytes = s.checked_nbytes(dtype_size(dt), __func__);
  *out = new_array_handle(Array(Buffer::allocate_pinned(nbytes), dt, s));
  CH_API_END
}

int32_t ch_array_is_pinned(const ch_array* array) {
  const std::shared_ptr<void>* p = handle_find(array, HandleKind::Array);
  if (!p) return 0;
  const Array& a = *static_cast<const Array*>(p->get());
  return a.buffer() && a.buffer()->pinned() ? 1 : 0;
}

ch_status ch_array_to_device_async(ch_array** out, const ch_array* array, ch_device device,
                                   ch_stream* stream) {
  CH_API_BEGIN
  require_out(out, __func__);
  const Array& a = array_of(array, __func__, "array");
  StreamObject& s = stream_of(stream, __func__);
  Device d = Device::from_c(device);
  if (d.is_cpu() && d.index != 0)
    fail(CH_ERR_DEVICE, __func__, ": CPU device index must be 0, got ", d.index);
  if (!d.is_cpu()) backend_for(d, __func__);
  // Allocated on the stream (device side) or page-locked (host side).
  Array r = d.is_cpu() ? Array(Buffer::allocate_pinned(a.nbytes()), a.dtype(), a.shape())
                       : Array(Buffer::allocate(a.nbytes(), d, s.device == d ? s.native : nullptr),
                               a.dtype(), a.shape());
  copy_async(r, a, s, __func__);
  *out = new_array_handle(std::move(r));
  CH_API_END
}

ch_status ch_array_copy_from_async(ch_array* dst, const ch_array* src, ch_stream* stream) {
  CH_API_BEGIN
  const Array& d = array_of(dst, __func__, "dst");
  const Array& s = array_of(src, __func__, "src");
  copy_async(d, s, stream_of(stream, __func__), __func__);
  CH_API_END
}

}  // extern "C"
