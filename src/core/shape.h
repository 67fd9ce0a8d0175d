// Array shapes: at most CH_MAX_NDIM extents, stored inline.
#pragma once

#include <ch/common.h>

#include <cstdint>
#include <initializer_list>
#include <string>

namespace chainerc {

class Shape {
 public:
  Shape() = default;
  Shape(std::initializer_list<int64_t> dims);
  // Validates ndim and extents (Error naming `who` on failure).
  static Shape from_c(const int64_t* dims, int32_t ndim, const char* who);

  int32_t ndim() const { return ndim_; }
  int64_t operator[](int32_t i) const { return dims_[i]; }
  int64_t& operator[](int32_t i) { return dims_[i]; }
  const int64_t* data() const { return dims_; }
  int64_t size() const;  // product of extents (1 for 0-d)
  // Bytes of an array of this shape with elements of `itemsize` bytes;
  // Error(CH_ERR_SHAPE) naming the shape when that does not fit 62 bits
  // (no allocation could hold it, and the arithmetic must never wrap).
  size_t checked_nbytes(size_t itemsize, const char* who) const;
  void push_back(int64_t d);
  bool operator==(const Shape& o) const;
  bool operator!=(const Shape& o) const { return !(*this == o); }
  std::string to_string() const;  // "(2, 3)", "()"

 private:
  int32_t ndim_ = 0;
  int64_t dims_[CH_MAX_NDIM] = {};
};

// A shape seen as (outer, extent, inner) around `axis` (0 <= axis < ndim):
// the product of the extents before the axis, the axis's own, and the
// product of those after it. How softmax walks axis 1 and concat its axis.
struct AxisSplit {
  int64_t outer, extent, inner;
};
AxisSplit split_at_axis(const Shape& s, int32_t axis);

// NumPy broadcasting of two shapes; Error(CH_ERR_SHAPE) naming `who` if impossible.
Shape broadcast_shapes(const Shape& a, const Shape& b, const char* who);
// The largest extent or element count chainerc accepts (an array's bytes
// must fit 62 bits, so no count computed from extents can wrap int64_t).
constexpr int64_t kMaxExtent = int64_t{1} << 62;
// The one place where sizes computed from user input are checked: a + b and
// a * b of non-negative counts, or Error(CH_ERR_SHAPE) naming `who` and `what`
// ("extent along axis 1") when the result leaves [0, 2**62].
int64_t checked_add(int64_t a, int64_t b, const char* who, const char* what);
int64_t checked_mul(int64_t a, int64_t b, const char* who, const char* what);
// Output extent of a sliding window (pooling, convolution) over an extent
// `in` with window k, stride s and pad p, Chainer's get_conv_outsize:
// (in + 2p - k) / s + 1, or with cover_all (in + 2p - k + s - 1) / s + 1.
// Error (CH_ERR_INVALID_ARGUMENT for a non-positive window or stride or any
// value past 2**62, CH_ERR_SHAPE for a window larger than the padded extent
// or a padded extent past 2**62) instead of overflow, naming `who` and `axis` ("height").
// Whether a window k fits the extent `in` padded by p on each side (no overflow).
bool window_fits(int64_t in, int64_t k, int64_t p);
int64_t window_count(int64_t in, int64_t k, int64_t s, int64_t p, bool cover_all, const char* who,
                     const char* axis);

// Normalize a possibly negative axis for `ndim` dimensions; Error if out of range.
int32_t normalize_axis(int32_t axis, int32_t ndim, const char* who);

}  // namespace chainerc
