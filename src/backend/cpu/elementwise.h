// CPU elementwise kernels shared by the built-in functions: unary maps,
// binary maps with NumPy broadcasting, and the reduction that undoes a
// broadcast (sum_to). Header-only templates so each op instantiates only
// what it uses and the compiler can vectorize the inner loops.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "core/array.h"
#include "core/error.h"
#include "parallel.h"

namespace chainerc::cpu {

// The sum over [0, n) of partial(begin, end) -> double on fixed blocks of
// 2^14 elements: the blocks run in parallel and their results are added in
// order, so the total does not depend on the thread count.
template <typename F>
double sum_blocks(int64_t n, F partial) {
  constexpr int64_t kBlock = int64_t{1} << 14;
  const int64_t blocks = (n + kBlock - 1) / kBlock;
  if (blocks <= 1) return n > 0 ? partial(int64_t{0}, n) : 0.0;
  std::vector<double> sums(static_cast<size_t>(blocks));
  parallel_for(blocks, std::max<int64_t>(1, kElementwiseGrain / kBlock), [&](int64_t b, int64_t e) {
    for (int64_t k = b; k < e; ++k)
      sums[static_cast<size_t>(k)] = partial(k * kBlock, std::min(n, (k + 1) * kBlock));
  });
  double total = 0;
  for (double v : sums) total += v;
  return total;
}

// These helpers read and write host memory: a defensive check that no array
// of another device reaches them (the kernel registry sends CUDA arrays to
// the CUDA backend's kernels, so arriving here would be the caller's bug).
inline void require_cpu(const Array& a, const char* who) {
  if (!a.device().is_cpu())
    fail(CH_ERR_UNSUPPORTED, who, ": ", a.describe(),
         " is not supported: no CUDA backend in this build");
}

// Strides (in elements) of `s` viewed as broadcast to `out` (0 on broadcast axes),
// right-aligned to out's ndim.
inline void broadcast_strides(const Shape& s, const Shape& out, int64_t* strides) {
  int32_t n = out.ndim(), off = n - s.ndim();
  int64_t stride = 1;
  for (int32_t i = n - 1; i >= 0; --i) {
    int32_t j = i - off;
    int64_t d = j >= 0 ? s[j] : 1;
    strides[i] = (d == 1) ? 0 : stride;
    stride *= d;
  }
}

// out = f(a, b) where out has the broadcast shape `so` of `sa` and `sb`.
template <typename T, typename F>
void binary_broadcast(const T* a, const Shape& sa, const T* b, const Shape& sb, T* out,
                      const Shape& so, F f) {
  const int64_t n = so.size();
  if (sa == sb) {
    for (int64_t i = 0; i < n; ++i) out[i] = f(a[i], b[i]);
    return;
  }
  if (sb.size() == 1 && sa.size() == n) {
    const T bv = b[0];
    for (int64_t i = 0; i < n; ++i) out[i] = f(a[i], bv);
    return;
  }
  if (sa.size() == 1 && sb.size() == n) {
    const T av = a[0];
    for (int64_t i = 0; i < n; ++i) out[i] = f(av, b[i]);
    return;
  }
  if (n == 0) return;
  const int32_t nd = so.ndim();
  int64_t st_a[CH_MAX_NDIM], st_b[CH_MAX_NDIM], idx[CH_MAX_NDIM] = {};
  broadcast_strides(sa, so, st_a);
  broadcast_strides(sb, so, st_b);
  const int64_t inner = so[nd - 1], ia = st_a[nd - 1], ib = st_b[nd - 1];
  int64_t oa = 0, ob = 0;
  for (int64_t o = 0; o < n; o += inner) {
    for (int64_t k = 0; k < inner; ++k) out[o + k] = f(a[oa + k * ia], b[ob + k * ib]);
    // advance the odometer over the outer axes
    for (int32_t d = nd - 2; d >= 0; --d) {
      oa += st_a[d];
      ob += st_b[d];
      if (++idx[d] < so[d]) break;
      oa -= st_a[d] * so[d];
      ob -= st_b[d] * so[d];
      idx[d] = 0;
    }
  }
}

// Sum `g` (shape sg) over the axes along which `s` was broadcast to sg, giving
// an array of shape s (NumPy: g.sum(axes).reshape(s)). Returns g itself when
// the shapes are equal.
Array sum_to(const Array& g, const Shape& s);
// The same into `out`, whose shape is s (checked by the caller).
void sum_to_into(const Array& g, Array& out);

// x broadcast to out's shape (NumPy rules, already checked), materialized. Any dtype.
void broadcast_into(const Array& x, Array& out);

// acc += g elementwise (same shape and dtype), in place.
void add_into(Array& acc, const Array& g);

}  // namespace chainerc::cpu
