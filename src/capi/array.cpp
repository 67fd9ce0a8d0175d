// C API: ch_array.
#include <cmath>
#include <cstring>

#include "api.h"
#include "core/allocator.h"
#include "core/caching_allocator.h"
#include "core/device_backend.h"
#include "core/random.h"

using namespace chainerc;
using namespace chainerc::capi;

namespace {
Device device_arg(ch_device d, const char* who) {
  if (d.type == CH_DEVICE_CPU) {
    if (d.index != 0) fail(CH_ERR_DEVICE, who, ": CPU device index must be 0, got ", d.index);
    return Device{};
  }
  if (d.type == CH_DEVICE_CUDA) {
    Device dev = Device::from_c(d);
    backend_for(dev, who);  // CH_ERR_DEVICE "no CUDA device: ..." unless it exists
    return dev;
  }
  fail(CH_ERR_DEVICE, who, ": unknown device type ", d.type);
}
}  // namespace

extern "C" {

size_t ch_dtype_size(ch_dtype dtype) {
  return is_valid_dtype(dtype) ? dtype_size(static_cast<DType>(dtype)) : 0;
}
const char* ch_dtype_name(ch_dtype dtype) {
  return is_valid_dtype(dtype) ? dtype_name(static_cast<DType>(dtype)) : "unknown";
}
ch_device ch_device_cpu(void) { return ch_device{CH_DEVICE_CPU, 0}; }

ch_status ch_array_new(ch_array** out, ch_dtype dtype, const int64_t* shape, int32_t ndim,
                       const void* data, ch_device device) {
  CH_API_BEGIN
  require_out(out, __func__);
  const DType dt = dtype_arg(dtype, __func__);
  const Shape s = Shape::from_c(shape, ndim, __func__);
  const Device d = device_arg(device, __func__);
  const size_t nbytes = s.checked_nbytes(dtype_size(dt), __func__);
  if (nbytes && !data)
    fail(CH_ERR_INVALID_ARGUMENT, __func__, ": data is NULL for ",
         Array::empty(dt, s, d).describe());
  *out = new_array_handle(Array::from_host(dt, s, data, d));
  CH_API_END
}

ch_status ch_array_new_empty(ch_array** out, ch_dtype dtype, const int64_t* shape, int32_t ndim,
                             ch_device device) {
  CH_API_BEGIN
  require_out(out, __func__);
  *out = new_array_handle(Array::empty(dtype_arg(dtype, __func__),
                                       Shape::from_c(shape, ndim, __func__),
                                       device_arg(device, __func__)));
  CH_API_END
}

ch_status ch_array_new_full(ch_array** out, ch_dtype dtype, const int64_t* shape, int32_t ndim,
                            double value, ch_device device) {
  CH_API_BEGIN
  require_out(out, __func__);
  *out =
      new_array_handle(Array::full(dtype_arg(dtype, __func__), Shape::from_c(shape, ndim, __func__),
                                   value, device_arg(device, __func__)));
  CH_API_END
}

ch_status ch_array_wrap(ch_array** out, ch_dtype dtype, const int64_t* shape, int32_t ndim,
                        void* data, ch_device device, ch_release_callback release,
                        void* user_data) {
  CH_API_BEGIN
  require_out(out, __func__);
  DType dt = dtype_arg(dtype, __func__);
  Shape s = Shape::from_c(shape, ndim, __func__);
  Device dev = device_arg(device, __func__);
  size_t nbytes = s.checked_nbytes(dtype_size(dt), __func__);
  if (!data && nbytes)
    fail(CH_ERR_INVALID_ARGUMENT, __func__, ": data is NULL for a ", nbytes, "-byte array");
  *out = new_array_handle(Array(Buffer::wrap(data, nbytes, dev, release, user_data), dt, s));
  CH_API_END
}

ch_status ch_array_copy(ch_array** out, const ch_array* array) {
  CH_API_BEGIN
  require_out(out, __func__);
  *out = new_array_handle(array_of(array, __func__, "array").copy());
  CH_API_END
}

ch_status ch_array_reshape(ch_array** out, const ch_array* array, const int64_t* shape,
                           int32_t ndim) {
  CH_API_BEGIN
  require_out(out, __func__);
  *out = new_array_handle(
      array_of(array, __func__, "array").reshaped(Shape::from_c(shape, ndim, __func__)));
  CH_API_END
}

ch_status ch_array_read(const ch_array* array, void* dst, size_t nbytes) {
  CH_API_BEGIN
  const Array& a = array_of(array, __func__, "array");
  if (nbytes != a.nbytes())
    fail(CH_ERR_INVALID_ARGUMENT, __func__, ": buffer of ", nbytes, " bytes for ", a.describe(),
         " (", a.nbytes(), " bytes)");
  if (nbytes && !dst) fail(CH_ERR_INVALID_ARGUMENT, __func__, ": dst is NULL");
  copy_bytes(dst, Device{}, a.raw(), a.device(), nbytes);
  CH_API_END
}

ch_status ch_array_write(ch_array* array, const void* src, size_t nbytes) {
  CH_API_BEGIN
  const Array& a = array_of(array, __func__, "array");
  if (nbytes != a.nbytes())
    fail(CH_ERR_INVALID_ARGUMENT, __func__, ": buffer of ", nbytes, " bytes for ", a.describe(),
         " (", a.nbytes(), " bytes)");
  if (nbytes && !src) fail(CH_ERR_INVALID_ARGUMENT, __func__, ": src is NULL");
  copy_bytes(a.raw_for_write(), a.device(), src, Device{}, nbytes);
  CH_API_END
}

ch_status ch_array_fill(ch_array* array, double value) {
  CH_API_BEGIN
  mutable_array_of(array, __func__, "array").fill(value);
  CH_API_END
}

ch_status ch_array_get(double* out, const ch_array* array, int64_t index) {
  CH_API_BEGIN
  if (!out) fail(CH_ERR_INVALID_ARGUMENT, __func__, ": the output pointer 'out' is NULL");
  *out = 0;
  *out = array_of(array, __func__, "array").get(index);
  CH_API_END
}

ch_array* ch_array_retain(ch_array* array) {
  return handle_retain(array, HandleKind::Array) ? array : nullptr;
}

ch_status ch_array_release(ch_array* array) {
  CH_API_BEGIN
  handle_release(array, HandleKind::Array, __func__);
  CH_API_END
}

#define CH_ARRAY_GETTER(type, name, expr, fallback)                         \
  type name(const ch_array* array) {                                        \
    const std::shared_ptr<void>* p = handle_find(array, HandleKind::Array); \
    if (!p) return fallback;                                                \
    const Array& a = *static_cast<const Array*>(p->get());                  \
    return expr;                                                            \
  }

// The pointer leaves the engine: the buffer is never zeroed lazily again
// (Buffer::defer_zero), so that zero_grads writes zeros the caller sees.
void* ch_array_data(const ch_array* array) {
  const std::shared_ptr<void>* p = handle_find(array, HandleKind::Array);
  if (!p) return nullptr;
  const Array& a = *static_cast<const Array*>(p->get());
  if (a.buffer()) a.buffer()->expose();
  return a.raw();
}
CH_ARRAY_GETTER(ch_dtype, ch_array_dtype, static_cast<ch_dtype>(a.dtype()), -1)
CH_ARRAY_GETTER(int32_t, ch_array_ndim, a.ndim(), 0)
CH_ARRAY_GETTER(const int64_t*, ch_array_shape, a.shape().data(), nullptr)
CH_ARRAY_GETTER(int64_t, ch_array_size, a.size(), 0)
CH_ARRAY_GETTER(size_t, ch_array_nbytes, a.nbytes(), 0)
CH_ARRAY_GETTER(ch_device, ch_array_device, a.device().to_c(), (ch_device{0, 0}))

ch_status ch_memory_stats_get(ch_memory_stats* out, ch_device device) {
  CH_API_BEGIN
  if (!out) fail(CH_ERR_INVALID_ARGUMENT, __func__, ": the output pointer 'out' is NULL");
  Device d = device_arg(device, __func__);
  *out = backend_for(d, __func__).memory_stats(d.index);
  CH_API_END
}

ch_status ch_memory_empty_cache(ch_device device) {
  CH_API_BEGIN
  Device d = device_arg(device, __func__);
  backend_for(d, __func__).empty_cache(d.index);
  CH_API_END
}

ch_status ch_array_to_device(ch_array** out, const ch_array* array, ch_device device) {
  CH_API_BEGIN
  require_out(out, __func__);
  const Array& a = array_of(array, __func__, "array");
  *out = new_array_handle(a.to_device(device_arg(device, __func__)));
  CH_API_END
}

ch_status ch_array_copy_from(ch_array* dst, const ch_array* src) {
  CH_API_BEGIN
  const Array& d = array_of(dst, __func__, "dst");
  const Array& s = array_of(src, __func__, "src");
  if (d.dtype() != s.dtype() || d.size() != s.size())
    fail(CH_ERR_SHAPE, __func__, ": cannot copy a ", s.describe(), " into a ", d.describe());
  copy_bytes(d.raw_for_write(), d.device(), s.raw(), s.device(), s.nbytes());
  CH_API_END
}

ch_status ch_array_fill_uniform(ch_array* array, double low, double high) {
  CH_API_BEGIN
  Array& a = mutable_array_of(array, __func__, "array");
  if (!(low < high) || !std::isfinite(low) || !std::isfinite(high))
    fail(CH_ERR_INVALID_ARGUMENT, __func__, ": low = ", low, ", high = ", high,
         "; finite bounds with low < high are needed");
  random::fill_uniform(a, low, high);
  CH_API_END
}

ch_status ch_array_fill_normal(ch_array* array, double mean, double stddev) {
  CH_API_BEGIN
  Array& a = mutable_array_of(array, __func__, "array");
  if (!(stddev > 0) || !std::isfinite(mean) || !std::isfinite(stddev))
    fail(CH_ERR_INVALID_ARGUMENT, __func__, ": mean = ", mean, ", stddev = ", stddev,
         "; a finite mean and a finite stddev > 0 are needed");
  random::fill_normal(a, mean, stddev);
  CH_API_END
}

ch_status ch_memory_set_limit(ch_device device, size_t bytes) {
  CH_API_BEGIN
  Device d = device_arg(device, __func__);
  if (d.is_cpu())
    fail(CH_ERR_UNSUPPORTED, __func__, ": memory limits apply to CUDA devices; the CPU has none");
  backend_for(d, __func__).set_memory_limit(d.index, bytes);
  CH_API_END
}

ch_status ch_memory_limit(size_t* out, ch_device device) {
  CH_API_BEGIN
  if (!out) fail(CH_ERR_INVALID_ARGUMENT, __func__, ": the output pointer 'out' is NULL");
  *out = 0;
  Device d = device_arg(device, __func__);
  if (!d.is_cpu()) *out = backend_for(d, __func__).memory_limit(d.index);
  CH_API_END
}

void ch_memory_set_oom_hook(ch_oom_hook hook, void* user_data) { set_oom_hook(hook, user_data); }

}  // extern "C"
