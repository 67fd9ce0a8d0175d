// CPU kernels of max_pooling_2d: one (h, w) plane per task of the pool.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

#include "backend/cpu/kernel_list.h"
#include "backend/cpu/parallel.h"
#include "kernels/pooling.h"

namespace chainerc::cpu {
namespace {

using kernels::Pool2D;

// Whether v replaces best as the window's maximum so far: a larger value, or
// (in a plane holding a NaN) the window's first NaN (nothing is larger than a
// NaN: it stays). Planes without NaN take the plain comparison.
template <bool Nan, typename T>
inline bool wins(T v, T best) {
  if constexpr (Nan)
    return (v > best) | ((v != v) & (best == best));  // no short circuit: vectorises
  else
    return v > best;
}

// One output position whose window may reach into the padding: the maximum
// of the window's part inside the plane and its flat index (the first maximum
// in window order, the first NaN for a window holding one; -inf and -1 for a
// window wholly in the padding).
template <bool Nan, typename T>
void pool_window(const T* xs, T* ys, int32_t* as, const Pool2D& p, int64_t oy, int64_t ox) {
  const int64_t y0 = oy * p.sy - p.ph, x0 = ox * p.sx - p.pw;
  const int64_t ya = std::max<int64_t>(y0, 0), yb = std::min(y0 + p.kh, p.h);
  const int64_t xa = std::max<int64_t>(x0, 0), xb = std::min(x0 + p.kw, p.w);
  const int64_t o = oy * p.ow + ox;
  if (ya >= yb || xa >= xb) {
    ys[o] = -std::numeric_limits<T>::infinity();
    as[o] = -1;
    return;
  }
  int32_t arg = static_cast<int32_t>(ya * p.w + xa);
  T best = xs[arg];
  for (int64_t iy = ya; iy < yb; ++iy)
    for (int64_t ix = xa; ix < xb; ++ix) {
      const T v = xs[iy * p.w + ix];
      if (wins<Nan>(v, best)) {
        best = v;
        arg = static_cast<int32_t>(iy * p.w + ix);
      }
    }
  ys[o] = best;
  as[o] = arg;
}

// One (h, w) plane. Windows wholly inside the row range of the plane's
// columns are done a window offset (ky, kx) at a time across the whole
// output row: branch-free selects over consecutive outputs that the compiler
// vectorises (a window at a time, maxima of random data mispredict half the
// time and the loop overhead dominates 2x2 windows). Visiting the offsets in
// window order with a strict > keeps the first maximum, as pool_window does.
// Without Nan, a NaN at a window's first offset stays (nothing is larger)
// but a later one is skipped: returns whether such a NaN was seen (the
// caller then does the plane again with Nan). Windows cut by the edges are
// done one by one, NaN-aware either way.
template <bool Nan, typename T>
bool pool_plane(const T* xs, T* ys, int32_t* as, const Pool2D& p) {
  int32_t seen = 0;  // a NaN after a window's first offset (without Nan)
  // Output columns whose windows lie inside [0, w): x0 >= 0 and x0 + kw <= w.
  const int64_t lo = std::min(p.ow, (p.pw + p.sx - 1) / p.sx);
  const int64_t hi = std::max(
      lo, std::min(p.ow, p.w + p.pw - p.kw >= 0 ? (p.w + p.pw - p.kw) / p.sx + 1 : int64_t{0}));
  for (int64_t oy = 0; oy < p.oh; ++oy) {
    for (int64_t ox = 0; ox < lo; ++ox) pool_window<true>(xs, ys, as, p, oy, ox);
    for (int64_t ox = hi; ox < p.ow; ++ox) pool_window<true>(xs, ys, as, p, oy, ox);
    const int64_t y0 = oy * p.sy - p.ph;
    const int64_t ya = std::max<int64_t>(y0, 0), yb = std::min(y0 + p.kh, p.h);
    if (lo >= hi) continue;
    if (ya >= yb) {
      for (int64_t ox = lo; ox < hi; ++ox) pool_window<true>(xs, ys, as, p, oy, ox);
      continue;
    }
    T* __restrict yrow = ys + oy * p.ow;
    int32_t* __restrict arow = as + oy * p.ow;
    const int64_t sx = p.sx;
    for (int64_t iy = ya; iy < yb; ++iy)
      for (int64_t kx = 0; kx < p.kw; ++kx) {
        const int64_t base = iy * p.w - p.pw + kx;  // flat index of (iy, ox * sx - pw + kx) at ox 0
        const T* __restrict r = xs + base;
        if (iy == ya && kx == 0) {
          for (int64_t ox = lo; ox < hi; ++ox) {
            yrow[ox] = r[ox * sx];
            arow[ox] = static_cast<int32_t>(base + ox * sx);
          }
          continue;
        }
        for (int64_t ox = lo; ox < hi; ++ox) {
          const T v = r[ox * sx], best = yrow[ox];
          const int32_t m = -static_cast<int32_t>(wins<Nan>(v, best));  // all ones if v wins
          arow[ox] = (static_cast<int32_t>(base + ox * sx) & m) | (arow[ox] & ~m);
          yrow[ox] = Nan ? (m ? v : best) : std::max(best, v);
          if constexpr (!Nan) seen |= static_cast<int32_t>(v != v);
        }
      }
  }
  return seen != 0;
}

void max_pool_2d_forward(const Array& x, const Pool2D& p, Array& y, Array& argmax) {
  argmax = Array::empty(DType::Int32, y.shape(), x.device());
  dispatch_floating(x.dtype(), "max_pooling_2d", [&](auto t) {
    using T = decltype(t);
    const T* px = x.data<T>();
    T* py = y.data<T>();
    int32_t* pa = argmax.data<int32_t>();
    const int64_t plane_in = p.h * p.w, plane_out = p.oh * p.ow;
    parallel_for(p.n * p.c, std::max<int64_t>(1, 16384 / std::max<int64_t>(plane_in, 1)),
                 [&](int64_t b, int64_t e) {
                   for (int64_t q = b; q < e; ++q) {
                     const T* xs = px + q * plane_in;
                     if (pool_plane<false>(xs, py + q * plane_out, pa + q * plane_out, p))
                       pool_plane<true>(xs, py + q * plane_out, pa + q * plane_out, p);
                   }
                 });
  });
}

// Whether v is a window's maximum `target` (a NaN for a NaN).
template <typename T>
inline bool matches(T v, T target) {
  return (v == target) | ((v != v) & (target != target));  // no short circuit: vectorises
}

// The position of output (oy, ox)'s first maximum in its window: the first
// position in window order where x matches y (-1 for a window wholly in the
// padding).
template <typename T>
int32_t first_maximum(const T* xs, T target, const Pool2D& p, int64_t oy, int64_t ox) {
  const int64_t y0 = oy * p.sy - p.ph, x0 = ox * p.sx - p.pw;
  const int64_t ya = std::max<int64_t>(y0, 0), yb = std::min(y0 + p.kh, p.h);
  const int64_t xa = std::max<int64_t>(x0, 0), xb = std::min(x0 + p.kw, p.w);
  for (int64_t iy = ya; iy < yb; ++iy)
    for (int64_t ix = xa; ix < xb; ++ix)
      if (matches(xs[iy * p.w + ix], target)) return static_cast<int32_t>(iy * p.w + ix);
  return -1;
}

// One plane's argmax from x and forward's y, into `as` (the plane's outputs),
// for a forward that kept none: windows cut by the plane's edges one by one,
// the others a window offset at a time across an output row with
// branch-free selects, as pool_plane (an output takes the first offset, in
// window order, whose x matches its y).
template <typename T>
void argmax_plane(const T* xs, const T* ys, int32_t* as, const Pool2D& p) {
  const int64_t lo = std::min(p.ow, (p.pw + p.sx - 1) / p.sx);
  const int64_t hi = std::max(
      lo, std::min(p.ow, p.w + p.pw - p.kw >= 0 ? (p.w + p.pw - p.kw) / p.sx + 1 : int64_t{0}));
  for (int64_t oy = 0; oy < p.oh; ++oy) {
    const T* yrow = ys + oy * p.ow;
    int32_t* __restrict arow = as + oy * p.ow;
    for (int64_t ox = 0; ox < lo; ++ox) arow[ox] = first_maximum(xs, yrow[ox], p, oy, ox);
    for (int64_t ox = hi; ox < p.ow; ++ox) arow[ox] = first_maximum(xs, yrow[ox], p, oy, ox);
    for (int64_t ox = lo; ox < hi; ++ox) arow[ox] = -1;
    const int64_t y0 = oy * p.sy - p.ph;
    const int64_t ya = std::max<int64_t>(y0, 0), yb = std::min(y0 + p.kh, p.h);
    const int64_t sx = p.sx;
    for (int64_t iy = ya; iy < yb; ++iy)
      for (int64_t kx = 0; kx < p.kw; ++kx) {
        const int64_t base = iy * p.w - p.pw + kx;  // flat index of (iy, ox * sx - pw + kx) at ox 0
        const T* __restrict r = xs + base;
        for (int64_t ox = lo; ox < hi; ++ox) {
          const int32_t m = -static_cast<int32_t>((arow[ox] < 0) & matches(r[ox * sx], yrow[ox]));
          arow[ox] = (static_cast<int32_t>(base + ox * sx) & m) | (arow[ox] & ~m);
        }
      }
  }
}

// Calls f(q, a) for each (sample, channel) plane q over the pool, with a the
// plane's first-maximum indices: the forward's argmax when it kept one, else
// recomputed from x and y (the routing both backward and its gather follow).
template <typename T, typename F>
void for_each_argmax_plane(const Array& x, const Array& y, const Array& argmax, const Pool2D& p,
                           F&& f) {
  const int32_t* pa = argmax.defined() ? argmax.data<int32_t>() : nullptr;
  const T* px = pa ? nullptr : x.data<T>();  // x and y are read only without an argmax
  const T* py = pa ? nullptr : y.data<T>();
  const int64_t plane_in = p.h * p.w, plane_out = p.oh * p.ow;
  parallel_for(p.n * p.c, std::max<int64_t>(1, 16384 / std::max<int64_t>(plane_in, 1)),
               [&](int64_t b, int64_t e) {
                 std::vector<int32_t> scratch(pa ? 0 : static_cast<size_t>(plane_out));
                 for (int64_t q = b; q < e; ++q) {
                   const int32_t* a = pa ? pa + q * plane_out : scratch.data();
                   if (!pa) argmax_plane(px + q * plane_in, py + q * plane_out, scratch.data(), p);
                   f(q, a);
                 }
               });
}

void max_pool_2d_backward(const Array& x, const Array& y, const Array& argmax, const Array& gy,
                          const Pool2D& p, Array& gx) {
  dispatch_floating(gx.dtype(), "max_pooling_2d", [&](auto t) {
    using T = decltype(t);
    const T* pg = gy.data<T>();
    T* pgx = gx.data<T>();
    const int64_t plane_in = p.h * p.w, plane_out = p.oh * p.ow;
    for_each_argmax_plane<T>(x, y, argmax, p, [&](int64_t q, const int32_t* a) {
      T* d = pgx + q * plane_in;
      const T* g = pg + q * plane_out;
      for (int64_t i = 0; i < plane_out; ++i)
        if (a[i] >= 0) d[a[i]] += g[i];
    });
  });
}

void max_pool_2d_gather(const Array& x, const Array& y, const Array& argmax, const Array& ggx,
                        const Pool2D& p, Array& ggy) {
  dispatch_floating(ggx.dtype(), "max_pooling_2d", [&](auto t) {
    using T = decltype(t);
    const T* pg = ggx.data<T>();
    T* out = ggy.data<T>();
    const int64_t plane_in = p.h * p.w, plane_out = p.oh * p.ow;
    for_each_argmax_plane<T>(x, y, argmax, p, [&](int64_t q, const int32_t* a) {
      const T* g = pg + q * plane_in;
      T* d = out + q * plane_out;
      for (int64_t i = 0; i < plane_out; ++i) d[i] = a[i] >= 0 ? g[a[i]] : T(0);
    });
  });
}

}  // namespace

void register_max_pooling_2d_kernels() {
  kernels::max_pool_2d_forward.set(CH_DEVICE_CPU, max_pool_2d_forward);
  kernels::max_pool_2d_backward.set(CH_DEVICE_CPU, max_pool_2d_backward);
  kernels::max_pool_2d_gather.set(CH_DEVICE_CPU, max_pool_2d_gather);
}

}  // namespace chainerc::cpu
