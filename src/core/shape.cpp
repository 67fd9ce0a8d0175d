#include "shape.h"

#include <algorithm>

#include "error.h"

namespace chainerc {

Shape::Shape(std::initializer_list<int64_t> dims) {
  for (int64_t d : dims) push_back(d);
}

Shape Shape::from_c(const int64_t* dims, int32_t ndim, const char* who) {
  if (ndim < 0 || ndim > CH_MAX_NDIM)
    fail(CH_ERR_SHAPE, who, ": ndim ", ndim, " is out of range [0, ", CH_MAX_NDIM, "]");
  if (ndim > 0 && dims == nullptr)
    fail(CH_ERR_INVALID_ARGUMENT, who, ": shape is NULL with ndim ", ndim);
  Shape s;
  for (int32_t i = 0; i < ndim; ++i) {
    if (dims[i] < 0) fail(CH_ERR_SHAPE, who, ": extent ", dims[i], " of axis ", i, " is negative");
    s.push_back(dims[i]);
  }
  s.checked_nbytes(1, who);  // the element count itself must not overflow
  return s;
}

size_t Shape::checked_nbytes(size_t itemsize, const char* who) const {
  constexpr uint64_t kLimit = uint64_t{1} << 62;
  uint64_t n = itemsize;
  bool zero = false, over = false;
  for (int32_t i = 0; i < ndim_; ++i) {
    if (dims_[i] == 0) zero = true;
    if (over || __builtin_mul_overflow(n, static_cast<uint64_t>(dims_[i]), &n) || n > kLimit)
      over = true;
  }
  if (zero) return 0;
  if (over)
    fail(CH_ERR_SHAPE, who, ": shape ", to_string(), " has too many elements (", itemsize,
         "-byte elements would need more than 2**62 bytes)");
  return static_cast<size_t>(n);
}

int64_t Shape::size() const {
  int64_t n = 1;
  for (int32_t i = 0; i < ndim_; ++i) n *= dims_[i];
  return n;
}

void Shape::push_back(int64_t d) {
  if (ndim_ >= CH_MAX_NDIM) fail(CH_ERR_SHAPE, "shape has more than ", CH_MAX_NDIM, " dimensions");
  dims_[ndim_++] = d;
}

bool Shape::operator==(const Shape& o) const {
  return ndim_ == o.ndim_ && std::equal(dims_, dims_ + ndim_, o.dims_);
}

std::string Shape::to_string() const {
  std::string s = "(";
  for (int32_t i = 0; i < ndim_; ++i) {
    if (i) s += ", ";
    s += std::to_string(dims_[i]);
  }
  if (ndim_ == 1) s += ",";
  return s + ")";
}

AxisSplit split_at_axis(const Shape& s, int32_t axis) {
  AxisSplit r{1, s[axis], 1};
  for (int32_t d = 0; d < axis; ++d) r.outer *= s[d];
  for (int32_t d = axis + 1; d < s.ndim(); ++d) r.inner *= s[d];
  return r;
}

Shape broadcast_shapes(const Shape& a, const Shape& b, const char* who) {
  int32_t n = std::max(a.ndim(), b.ndim());
  Shape out;
  for (int32_t i = 0; i < n; ++i) {
    int32_t ia = i - (n - a.ndim()), ib = i - (n - b.ndim());
    int64_t da = ia >= 0 ? a[ia] : 1, db = ib >= 0 ? b[ib] : 1;
    if (da != db && da != 1 && db != 1)
      fail(CH_ERR_SHAPE, who, ": shapes ", a.to_string(), " and ", b.to_string(),
           " cannot be broadcast together");
    out.push_back(da == 1 ? db : da);
  }
  return out;
}

int32_t normalize_axis(int32_t axis, int32_t ndim, const char* who) {
  if (axis < -ndim || axis >= ndim)
    fail(CH_ERR_INVALID_ARGUMENT, who, ": axis ", axis, " is out of range for ", ndim,
         "-dimensional input");
  return axis < 0 ? axis + ndim : axis;
}

}  // namespace chainerc
