// C API: CUDA devices, the current device, streams, page-locked memory and
// asynchronous copies (include/ch/cuda.h). Everything goes through the core's
// DeviceBackend, so this file builds with and without the CUDA backend.
#include <mutex>
#include <string>
#include <vector>

#include "api.h"
#include "core/device_backend.h"
#include "core/stream.h"

using namespace chainerc;
using namespace chainerc::capi;

namespace {

DeviceBackend& cuda_device(int32_t index, const char* who) {
  return backend_for(Device{CH_DEVICE_CUDA, index}, who);
}

Stream& stream_of(const ch_stream* h, const char* who) {
  return handle_object<Stream>(h, HandleKind::Stream, who, "stream");
}

DeviceGraph& graph_of(const ch_cuda_graph* h, const char* who) {
  return handle_object<DeviceGraph>(h, HandleKind::CudaGraph, who, "graph");
}

// The CUDA backend of a device that can capture: CH_ERR_DEVICE otherwise.
DeviceBackend& capture_backend(ch_device device, const char* who) {
  const Device d = Device::from_c(device);
  if (d.type != CH_DEVICE_CUDA)
    fail(CH_ERR_DEVICE, who, ": graphs capture a CUDA device's work, not ", d.to_string(),
         "'s (CPU work runs at once and cannot be replayed)");
  if (!cuda_backend())
    fail(CH_ERR_UNSUPPORTED, who, ": this build of chainerc has no CUDA backend");
  return backend_for(d, who);
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
  push_device(index, __func__);
  CH_API_END
}

ch_status ch_cuda_device_pop(void) {
  CH_API_BEGIN
  pop_device(__func__);
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

void* ch_cuda_engine_stream(int32_t device) {
  try {
    DeviceBackend* b = cuda_backend();
    if (!b || device < 0 || device >= b->device_count()) return nullptr;
    return b->engine_stream(device);
  } catch (...) {
    return nullptr;
  }
}

ch_status ch_stream_new(ch_stream** out, ch_device device) {
  CH_API_BEGIN
  require_out(out, __func__);
  auto s = std::make_shared<Stream>(Device::from_c(device), __func__);
  *out = static_cast<ch_stream*>(handle_new(HandleKind::Stream, std::move(s)));
  CH_API_END
}

ch_status ch_stream_synchronize(ch_stream* stream) {
  CH_API_BEGIN
  stream_of(stream, __func__).synchronize();
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
  return p ? static_cast<const Stream*>(p->get())->device().to_c() : ch_device{0, 0};
}

void* ch_stream_native(const ch_stream* stream) {
  const std::shared_ptr<void>* p = handle_find(stream, HandleKind::Stream);
  return p ? static_cast<const Stream*>(p->get())->native() : nullptr;
}

ch_status ch_array_new_pinned(ch_array** out, ch_dtype dtype, const int64_t* shape, int32_t ndim) {
  CH_API_BEGIN
  require_out(out, __func__);
  DType dt = dtype_arg(dtype, __func__);
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
  Stream& s = stream_of(stream, __func__);
  Device d = Device::from_c(device);
  if (d.is_cpu() && d.index != 0)
    fail(CH_ERR_DEVICE, __func__, ": CPU device index must be 0, got ", d.index);
  if (!d.is_cpu()) backend_for(d, __func__);
  // Allocated on the stream (device side) or page-locked (host side).
  Array r = d.is_cpu()
                ? Array(Buffer::allocate_pinned(a.nbytes()), a.dtype(), a.shape())
                : Array(Buffer::allocate(a.nbytes(), d, s.device() == d ? s.native() : nullptr),
                        a.dtype(), a.shape());
  s.copy_async(r, a, __func__);
  *out = new_array_handle(std::move(r));
  CH_API_END
}

ch_status ch_array_copy_from_async(ch_array* dst, const ch_array* src, ch_stream* stream) {
  CH_API_BEGIN
  const Array& d = mutable_array_of(dst, __func__, "dst");
  const Array& s = array_of(src, __func__, "src");
  stream_of(stream, __func__).copy_async(d, s, __func__);
  CH_API_END
}

ch_status ch_cuda_graph_begin_capture(ch_device device) {
  CH_API_BEGIN
  capture_backend(device, __func__).begin_capture(device.index);
  CH_API_END
}

ch_status ch_cuda_graph_end_capture(ch_cuda_graph** out, ch_device device) {
  CH_API_BEGIN
  require_out(out, __func__);
  std::shared_ptr<DeviceGraph> g = capture_backend(device, __func__).end_capture(device.index);
  *out = static_cast<ch_cuda_graph*>(handle_new(HandleKind::CudaGraph, std::move(g)));
  CH_API_END
}

ch_status ch_cuda_graph_replay(ch_cuda_graph* graph) {
  CH_API_BEGIN
  graph_of(graph, __func__).replay();
  CH_API_END
}

ch_status ch_cuda_graph_replay_with(ch_cuda_graph* graph, ch_array* const* targets,
                                    const ch_array* const* values, int32_t n) {
  CH_API_BEGIN
  DeviceGraph& g = graph_of(graph, __func__);
  if (n < 0) fail(CH_ERR_INVALID_ARGUMENT, __func__, ": n = ", n, " is negative");
  if (n > 0 && (!targets || !values))
    fail(CH_ERR_INVALID_ARGUMENT, __func__, ": targets or values is NULL with n = ", n);
  std::vector<std::pair<const Array*, const Array*>> copies;
  for (int32_t i = 0; i < n; ++i) {
    const std::string t = "targets[" + std::to_string(i) + "]";
    const std::string v = "values[" + std::to_string(i) + "]";
    const Array& dst = mutable_array_of(targets[i], __func__, t.c_str());
    const Array& src = array_of(values[i], __func__, v.c_str());
    if (dst.device() != g.device())
      fail(CH_ERR_DEVICE, __func__, ": ", t, " is a ", dst.describe(), ", not on the graph's ",
           g.device().to_string());
    if (dst.dtype() != src.dtype())
      fail(CH_ERR_DTYPE, __func__, ": ", v, " is a ", src.describe(), " but ", t, " is a ",
           dst.describe(), " (a replay reads the captured dtype)");
    if (dst.shape() != src.shape())
      fail(CH_ERR_SHAPE, __func__, ": ", v, " is a ", src.describe(), " but ", t, " is a ",
           dst.describe(), " (a replay cannot change shapes: capture a graph for each)");
    copies.emplace_back(&dst, &src);
  }
  for (auto& c : copies)
    copy_bytes(c.first->raw_for_write(), c.first->device(), c.second->raw(), c.second->device(),
               c.second->nbytes());
  g.replay();
  CH_API_END
}

ch_device ch_cuda_graph_device(const ch_cuda_graph* graph) {
  const std::shared_ptr<void>* p = handle_find(graph, HandleKind::CudaGraph);
  return p ? static_cast<const DeviceGraph*>(p->get())->device().to_c() : ch_device{0, 0};
}

int64_t ch_cuda_graph_size(const ch_cuda_graph* graph) {
  const std::shared_ptr<void>* p = handle_find(graph, HandleKind::CudaGraph);
  return p ? static_cast<const DeviceGraph*>(p->get())->size() : -1;
}

ch_status ch_cuda_graph_release(ch_cuda_graph* graph) {
  CH_API_BEGIN
  handle_release(graph, HandleKind::CudaGraph, __func__);
  CH_API_END
}

}  // extern "C"
