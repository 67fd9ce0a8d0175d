#include "elementwise.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "parallel.h"

namespace chainerc::cpu {

namespace {
// Sum of g[0, n) in double, eight lanes at a time (the lanes vectorise).
template <typename T>
double sum_lanes(const T* g, int64_t n) {
  double lanes[8] = {};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int l = 0; l < 8; ++l) lanes[l] += static_cast<double>(g[i + l]);
  double acc = 0;
  for (; i < n; ++i) acc += static_cast<double>(g[i]);
  for (double v : lanes) acc += v;
  return acc;
}

template <typename T>
void sum_to_typed(const T* g, const Shape& sg, T* out, const Shape& s) {
  const int64_t n = sg.size(), m = s.size();
  for (int64_t i = 0; i < m; ++i) out[i] = T(0);
  if (m == 1) {
    // In double for accuracy on long sums.
    out[0] = static_cast<T>(
        sum_blocks(n, [g](int64_t b, int64_t e) { return sum_lanes(g + b, e - b); }));
    return;
  }
  if (n == 0) return;
  const int32_t nd = sg.ndim();
  int64_t st[CH_MAX_NDIM], idx[CH_MAX_NDIM] = {};
  broadcast_strides(s, sg, st);
  const int64_t inner = sg[nd - 1], is = st[nd - 1];
  int64_t os = 0;
  for (int64_t o = 0; o < n; o += inner) {
    if (is == 0) {
      T acc = T(0);
      for (int64_t k = 0; k < inner; ++k) acc += g[o + k];
      out[os] += acc;
    } else {
      for (int64_t k = 0; k < inner; ++k) out[os + k] += g[o + k];
    }
    for (int32_t d = nd - 2; d >= 0; --d) {
      os += st[d];
      if (++idx[d] < sg[d]) break;
      os -= st[d] * sg[d];
      idx[d] = 0;
    }
  }
}
}  // namespace

void sum_to_into(const Array& g, Array& out) {
  dispatch_floating(g.dtype(), "sum_to", [&](auto t) {
    using T = decltype(t);
    sum_to_typed<T>(g.data<T>(), g.shape(), out.data<T>(), out.shape());
  });
}

Array sum_to(const Array& g, const Shape& s) {
  if (g.shape() == s) return g;
  require_cpu(g, "sum_to");
  if (s.ndim() > g.ndim() || broadcast_shapes(s, g.shape(), "sum_to") != g.shape())
    fail(CH_ERR_SHAPE, "sum_to: shape ", g.shape().to_string(), " cannot be summed to ",
         s.to_string());
  Array out = Array::empty(g.dtype(), s, g.device());
  sum_to_into(g, out);
  return out;
}

namespace {
template <typename T>
void broadcast_copy_typed(const T* x, const Shape& sx, T* out, const Shape& so) {
  const int64_t n = so.size();
  if (n == 0) return;
  if (sx.size() == 1) {
    for (int64_t i = 0; i < n; ++i) out[i] = x[0];
    return;
  }
  const int32_t nd = so.ndim();
  int64_t st[CH_MAX_NDIM], idx[CH_MAX_NDIM] = {};
  broadcast_strides(sx, so, st);
  const int64_t inner = so[nd - 1], is = st[nd - 1];
  if (sx.size() == inner && is == 1) {
    // One row copied to every row (a bias over a batch): row copies, split
    // over the pool.
    const int64_t rows = n / inner;
    parallel_for(rows, std::max<int64_t>(1, kElementwiseGrain / inner), [=](int64_t b, int64_t e) {
      for (int64_t r = b; r < e; ++r) std::memcpy(out + r * inner, x, sizeof(T) * inner);
    });
    return;
  }
  int64_t ox = 0;
  for (int64_t o = 0; o < n; o += inner) {
    for (int64_t k = 0; k < inner; ++k) out[o + k] = x[ox + k * is];
    for (int32_t d = nd - 2; d >= 0; --d) {
      ox += st[d];
      if (++idx[d] < so[d]) break;
      ox -= st[d] * so[d];
      idx[d] = 0;
    }
  }
}
}  // namespace

void broadcast_into(const Array& x, Array& out) {
  if (dtype_size(x.dtype()) == 8)
    broadcast_copy_typed(x.data<uint64_t>(), x.shape(), out.data<uint64_t>(), out.shape());
  else
    broadcast_copy_typed(x.data<uint32_t>(), x.shape(), out.data<uint32_t>(), out.shape());
}

void add_into(Array& acc, const Array& g) {
  require_cpu(acc, "add_into");
  if (acc.shape() != g.shape() || acc.dtype() != g.dtype())
    fail(CH_ERR_SHAPE, "cannot add ", g.describe(), " into ", acc.describe());
  dispatch_floating(acc.dtype(), "add_into", [&](auto t) {
    using T = decltype(t);
    T* a = acc.data<T>();
    const T* b = g.data<T>();
    parallel_for(acc.size(), kElementwiseGrain, [a, b](int64_t s, int64_t e) {
      T* __restrict pa = a;
      const T* __restrict pb = b;
      for (int64_t i = s; i < e; ++i) pa[i] += pb[i];
    });
  });
}

}  // namespace chainerc::cpu
