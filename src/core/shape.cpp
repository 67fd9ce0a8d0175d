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

namespace {
// The exact walks behind Shape::checked_nbytes and Shape::size, for what their
// one-pass check leaves in doubt. Out of line: the one pass then needs no
// stack frame (the message that fail() builds does).
[[gnu::noinline]] size_t exact_nbytes(const Shape& s, size_t itemsize, const char* who) {
  constexpr uint64_t kLimit = uint64_t{1} << 62;
  uint64_t n = itemsize;
  bool zero = false, over = false;
  for (int32_t i = 0; i < s.ndim(); ++i) {
    if (s[i] < 0)
      fail(CH_ERR_SHAPE, who, ": shape ", s.to_string(), " has the negative extent ", s[i],
           " on axis ", i);
    if (s[i] == 0) zero = true;
    if (over || __builtin_mul_overflow(n, static_cast<uint64_t>(s[i]), &n) || n > kLimit)
      over = true;
  }
  if (zero) return 0;
  if (over)
    fail(CH_ERR_SHAPE, who, ": shape ", s.to_string(), " has too many elements (", itemsize,
         "-byte elements would need more than 2**62 bytes)");
  return static_cast<size_t>(n);
}

[[gnu::noinline]] int64_t exact_size(const Shape& s) {
  // Zero first: (2**40, 2**40, 0) has no elements, and its leading product
  // must not be formed (it overflows).
  for (int32_t i = 0; i < s.ndim(); ++i)
    if (s[i] == 0) return 0;
  int64_t n = 1;
  for (int32_t i = 0; i < s.ndim(); ++i)
    if (s[i] < 0 || __builtin_mul_overflow(n, s[i], &n))
      fail(CH_ERR_SHAPE, "shape ", s.to_string(), " has no valid element count (",
           s[i] < 0 ? "a negative extent" : "the product overflows 64 bits", ")");
  return n;
}
}  // namespace

// Both run once per array made or kernel called, so the usual shape takes one
// pass: with the extents taken as unsigned, a negative one is at least 2**63,
// so a product that does not wrap is valid exactly when it is within the
// limit (and not 0, which for checked_nbytes may hide a negative extent).
size_t Shape::checked_nbytes(size_t itemsize, const char* who) const {
  uint64_t n = itemsize;
  bool over = false;
  for (int32_t i = 0; i < ndim_; ++i)
    over |= __builtin_mul_overflow(n, static_cast<uint64_t>(dims_[i]), &n);
  if (!over && n != 0 && n <= (uint64_t{1} << 62)) return static_cast<size_t>(n);
  return exact_nbytes(*this, itemsize, who);
}

int64_t Shape::size() const {
  // (0 with a zero extent, whatever the others: as exact_size.)
  uint64_t n = 1;
  bool over = false;
  for (int32_t i = 0; i < ndim_; ++i)
    over |= __builtin_mul_overflow(n, static_cast<uint64_t>(dims_[i]), &n);
  if (!over && n <= static_cast<uint64_t>(INT64_MAX)) return static_cast<int64_t>(n);
  return exact_size(*this);
}

void Shape::push_back(int64_t d) {
  if (ndim_ >= CH_MAX_NDIM) fail(CH_ERR_SHAPE, "shape has more than ", CH_MAX_NDIM, " dimensions");
  dims_[ndim_++] = d;
}

bool Shape::operator==(const Shape& o) const {
  // A loop, not std::equal: that becomes a memcmp call, dearer for the
  // few extents of a shape (compared several times per function applied).
  if (ndim_ != o.ndim_) return false;
  for (int32_t i = 0; i < ndim_; ++i)
    if (dims_[i] != o.dims_[i]) return false;
  return true;
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
  // An empty array has no rows: (2**40, C, 0) must not be walked as 2**40
  // rows of nothing (nor its leading product formed).
  if (s.size() == 0) return AxisSplit{0, s[axis], 0};
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

int64_t checked_add(int64_t a, int64_t b, const char* who, const char* what) {
  int64_t r;
  if (a < 0 || b < 0 || __builtin_add_overflow(a, b, &r) || r > kMaxExtent)
    fail(CH_ERR_SHAPE, who, ": ", what, " ", a, " + ", b, " is out of range [0, 2**62]");
  return r;
}

int64_t checked_mul(int64_t a, int64_t b, const char* who, const char* what) {
  int64_t r;
  if (a < 0 || b < 0 || __builtin_mul_overflow(a, b, &r) || r > kMaxExtent)
    fail(CH_ERR_SHAPE, who, ": ", what, " ", a, " * ", b, " is out of range [0, 2**62]");
  return r;
}

bool window_fits(int64_t in, int64_t k, int64_t p) {
  __extension__ typedef __int128 wide;
  return wide{in} + 2 * wide{p} >= wide{k};
}

int64_t window_count(int64_t in, int64_t k, int64_t s, int64_t p, bool cover_all, const char* who,
                     const char* axis) {
  if (in < 0 || k <= 0 || s <= 0 || p < 0 || in > kMaxExtent || k > kMaxExtent || s > kMaxExtent ||
      p > kMaxExtent)
    fail(CH_ERR_INVALID_ARGUMENT, who, ": ", axis, " extent ", in, ", window ", k, ", stride ", s,
         ", pad ", p, " (the window and stride must be positive and all of them at most 2**62)");
  // 128 bits: in + 2p + s - 1 may pass 2**63 even with every term <= 2**62.
  // The padded extent (with cover_all's overhang) is bounded by 2**62, so
  // that the kernels' window positions (o * s - p + k) never wrap either.
  __extension__ typedef __int128 wide;
  const wide padded = wide{in} + 2 * wide{p} + (cover_all ? s - 1 : 0);
  if (padded > kMaxExtent)
    fail(CH_ERR_SHAPE, who, ": the padded ", axis, " extent (", in, " with pad ", p,
         " on each side", cover_all ? " and the stride's overhang" : "", ") passes 2**62");
  if (!window_fits(in, k, p))
    fail(CH_ERR_SHAPE, who, ": the ", axis, " window ", k, " is larger than the padded extent (",
         in, " with pad ", p, " on each side)");
  const wide span = padded - k;
  return static_cast<int64_t>(span / s + 1);
}

int32_t normalize_axis(int32_t axis, int32_t ndim, const char* who) {
  if (axis < -ndim || axis >= ndim)
    fail(CH_ERR_INVALID_ARGUMENT, who, ": axis ", axis, " is out of range for ", ndim,
         "-dimensional input");
  return axis < 0 ? axis + ndim : axis;
}

}  // namespace chainerc
