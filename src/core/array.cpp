#include "array.h"

#include <cstring>

#include "allocator.h"
#include "error.h"

namespace chainerc {

std::shared_ptr<Buffer> Buffer::allocate(size_t nbytes, Device device) {
  if (!device.is_cpu())
    fail(CH_ERR_UNSUPPORTED, "cannot allocate on ", device.to_string(),
         ": this build of chainerc has no CUDA backend");
  auto b = std::make_shared<Buffer>(Key{});
  b->data_ = host_allocate(nbytes);
  b->nbytes_ = nbytes;
  b->device_ = device;
  b->owned_ = true;
  return b;
}

std::shared_ptr<Buffer> Buffer::wrap(void* data, size_t nbytes, Device device,
                                     ch_release_callback release, void* user_data) {
  auto b = std::make_shared<Buffer>(Key{});
  b->data_ = data;
  b->nbytes_ = nbytes;
  b->device_ = device;
  b->release_ = release;
  b->user_data_ = user_data;
  return b;
}

Buffer::~Buffer() {
  if (owned_)
    host_deallocate(data_, nbytes_);
  else if (release_)
    release_(data_, user_data_);
}

Array Array::empty(DType dtype, const Shape& shape, Device device) {
  size_t n = shape.checked_nbytes(dtype_size(dtype), "array");
  return Array(Buffer::allocate(n, device), dtype, shape);
}

namespace {
template <typename T>
void fill_typed(void* p, int64_t n, double v) {
  T* d = static_cast<T*>(p);
  T x = static_cast<T>(v);
  for (int64_t i = 0; i < n; ++i) d[i] = x;
}
}  // namespace

Array Array::full(DType dtype, const Shape& shape, double value, Device device) {
  Array a = empty(dtype, shape, device);
  a.fill(value);
  return a;
}

void Array::fill(double value) {
  if (!device().is_cpu())
    fail(CH_ERR_UNSUPPORTED, "fill: ", device().to_string(), " is not supported");
  switch (dtype_) {
    case DType::Float32:
      fill_typed<float>(raw(), size(), value);
      break;
    case DType::Float64:
      fill_typed<double>(raw(), size(), value);
      break;
    case DType::Int32:
      fill_typed<int32_t>(raw(), size(), value);
      break;
  }
}

Array Array::reshaped(const Shape& shape) const {
  if (shape.size() != size())
    fail(CH_ERR_SHAPE, "cannot reshape array of shape ", shape_.to_string(), " (size ", size(),
         ") to ", shape.to_string(), " (size ", shape.size(), ")");
  return Array(buffer_, dtype_, shape);
}

Array Array::copy() const {
  Array out = empty(dtype_, shape_, device());
  if (nbytes()) std::memcpy(out.raw(), raw(), nbytes());
  return out;
}

double Array::get(int64_t i) const {
  if (i < 0 || i >= size())
    fail(CH_ERR_INVALID_ARGUMENT, "index ", i, " is out of range for ", describe());
  if (!device().is_cpu())
    fail(CH_ERR_UNSUPPORTED, "get: ", device().to_string(), " is not supported");
  switch (dtype_) {
    case DType::Float32:
      return data<float>()[i];
    case DType::Float64:
      return data<double>()[i];
    case DType::Int32:
      return data<int32_t>()[i];
  }
  return 0;
}

std::string Array::describe() const {
  return std::string(dtype_name(dtype_)) + " array of shape " + shape_.to_string() + " on " +
         device().to_string();
}

}  // namespace chainerc
