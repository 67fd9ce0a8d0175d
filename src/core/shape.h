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
// Normalize a possibly negative axis for `ndim` dimensions; Error if out of range.
int32_t normalize_axis(int32_t axis, int32_t ndim, const char* who);

}  // namespace chainerc
