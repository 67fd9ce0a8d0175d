// C API: ch_array.
#include "api.h"
#include "core/allocator.h"

#include <cstring>

using namespace chainerc;
using namespace chainerc::capi;

namespace {
DType dtype_arg(ch_dtype d, const char* who) {
  if (!is_valid_dtype(d))
    fail(CH_ERR_DTYPE, who, ": dtype ", d, " is not one of CH_FLOAT32 (0), CH_FLOAT64 (1), CH_INT32 (2)");
  return static_cast<DType>(d);
}
Device device_arg(ch_device d, const char* who) {
  if (d.type == CH_DEVICE_CPU) {
    if (d.index != 0) fail(CH_ERR_DEVICE, who, ": CPU device index must be 0, got ", d.index);
    return Device{};
  }
  if (d.type == CH_DEVICE_CUDA)
    fail(CH_ERR_DEVICE, who, ": cuda:", d.index, " was requested but this build of chainerc has no CUDA backend");
  fail(CH_ERR_DEVICE, who, ": unknown device type ", d.type);
}
}  // namespace

extern "C" {

size_t ch_dtype_size(ch_dtype dtype) { return is_valid_dtype(dtype) ? dtype_size(static_cast<DType>(dtype)) : 0; }
const char* ch_dtype_name(ch_dtype dtype) {
  return is_valid_dtype(dtype) ? dtype_name(static_cast<DType>(dtype)) : "unknown";
}
ch_device ch_device_cpu(void) { return ch_device{CH_DEVICE_CPU, 0}; }

ch_status ch_array_new(ch_array** out, ch_dtype dtype, const int64_t* shape, int32_t ndim,
                       const void* data, ch_device device) {
  CH_API_BEGIN
  require_out(out, __func__);
  Array a = Array::empty(dtype_arg(dtype, __func__), Shape::from_c(shape, ndim, __func__),
                         device_arg(device, __func__));
  if (a.nbytes()) {
    if (!data) fail(CH_ERR_INVALID_ARGUMENT, __func__, ": data is NULL for ", a.describe());
    std::memcpy(a.raw(), data, a.nbytes());
  }
  *out = new_array_handle(std::move(a));
  CH_API_END
}

ch_status ch_array_new_empty(ch_array** out, ch_dtype dtype, const int64_t* shape, int32_t ndim,
                             ch_device device) {
  CH_API_BEGIN
  require_out(out, __func__);
  *out = new_array_handle(Array::empty(dtype_arg(dtype, __func__), Shape::from_c(shape, ndim, __func__),
                                       device_arg(device, __func__)));
  CH_API_END
}

ch_status ch_array_new_full(ch_array** out, ch_dtype dtype, const int64_t* shape, int32_t ndim,
                            double value, ch_device device) {
  CH_API_BEGIN
  require_out(out, __func__);
  *out = new_array_handle(Array::full(dtype_arg(dtype, __func__), Shape::from_c(shape, ndim, __func__),
                                      value, device_arg(device, __func__)));
  CH_API_END
}

ch_status ch_array_wrap(ch_array** out, ch_dtype dtype, const int64_t* shape, int32_t ndim, void* data,
                        ch_device device, ch_release_callback release, void* user_data) {
  CH_API_BEGIN
  require_out(out, __func__);
  DType dt = dtype_arg(dtype, __func__);
  Shape s = Shape::from_c(shape, ndim, __func__);
  Device dev = device_arg(device, __func__);
  size_t nbytes = s.checked_nbytes(dtype_size(dt), __func__);
  if (!data && nbytes) fail(CH_ERR_INVALID_ARGUMENT, __func__, ": data is NULL for a ", nbytes, "-byte array");
  *out = new_array_handle(Array(Buffer::wrap(data, nbytes, dev, release, user_data), dt, s));
  CH_API_END
}

ch_status ch_array_copy(ch_array** out, const ch_array* array) {
  CH_API_BEGIN
  require_out(out, __func__);
  *out = new_array_handle(array_of(array, __func__, "array").copy());
  CH_API_END
}

ch_status ch_array_reshape(ch_array** out, const ch_array* array, const int64_t* shape, int32_t ndim) {
  CH_API_BEGIN
  require_out(out, __func__);
  *out = new_array_handle(array_of(array, __func__, "array").reshaped(Shape::from_c(shape, ndim, __func__)));
  CH_API_END
}

ch_status ch_array_read(const ch_array* array, void* dst, size_t nbytes) {
  CH_API_BEGIN
  const Array& a = array_of(array, __func__, "array");
  if (nbytes != a.nbytes())
    fail(CH_ERR_INVALID_ARGUMENT, __func__, ": buffer of ", nbytes, " bytes for ", a.describe(), " (",
         a.nbytes(), " bytes)");
  if (nbytes && !dst) fail(CH_ERR_INVALID_ARGUMENT, __func__, ": dst is NULL");
  if (nbytes) std::memcpy(dst, a.raw(), nbytes);
  CH_API_END
}

ch_status ch_array_write(ch_array* array, const void* src, size_t nbytes) {
  CH_API_BEGIN
  const Array& a = array_of(array, __func__, "array");
  if (nbytes != a.nbytes())
    fail(CH_ERR_INVALID_ARGUMENT, __func__, ": buffer of ", nbytes, " bytes for ", a.describe(), " (",
         a.nbytes(), " bytes)");
  if (nbytes && !src) fail(CH_ERR_INVALID_ARGUMENT, __func__, ": src is NULL");
  if (nbytes) std::memcpy(a.raw(), src, nbytes);
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

#define CH_ARRAY_GETTER(type, name, expr, fallback)                            \
  type name(const ch_array* array) {                                           \
    const std::shared_ptr<void>* p = handle_find(array, HandleKind::Array);    \
    if (!p) return fallback;                                                   \
    const Array& a = *static_cast<const Array*>(p->get());                     \
    return expr;                                                               \
  }

CH_ARRAY_GETTER(void*, ch_array_data, a.raw(), nullptr)
CH_ARRAY_GETTER(ch_dtype, ch_array_dtype, static_cast<ch_dtype>(a.dtype()), -1)
CH_ARRAY_GETTER(int32_t, ch_array_ndim, a.ndim(), 0)
CH_ARRAY_GETTER(const int64_t*, ch_array_shape, a.shape().data(), nullptr)
CH_ARRAY_GETTER(int64_t, ch_array_size, a.size(), 0)
CH_ARRAY_GETTER(size_t, ch_array_nbytes, a.nbytes(), 0)
CH_ARRAY_GETTER(ch_device, ch_array_device, a.device().to_c(), (ch_device{0, 0}))

ch_status ch_memory_stats_get(ch_memory_stats* out, ch_device device) {
  CH_API_BEGIN
  if (!out) fail(CH_ERR_INVALID_ARGUMENT, __func__, ": the output pointer 'out' is NULL");
  device_arg(device, __func__);
  *out = host_memory_stats();
  CH_API_END
}

ch_status ch_memory_empty_cache(ch_device device) {
  CH_API_BEGIN
  device_arg(device, __func__);
  host_empty_cache();
  CH_API_END
}

}  // extern "C"
