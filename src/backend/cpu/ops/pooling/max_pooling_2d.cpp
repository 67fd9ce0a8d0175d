// CPU kernels of max_pooling_2d: one (h, w) plane per task of the pool.
#include <algorithm>
#include <cstdint>
#include <limits>

#include "backend/cpu/kernel_list.h"
#include "backend/cpu/parallel.h"
#include "kernels/pooling.h"

namespace chainerc::cpu {
namespace {

using kernels::Pool2D;

// One output position whose window may reach into the padding: the maximum
// of the window's part inside the plane and its flat index (the first maximum
// in window order; -inf and -1 for a window wholly in the padding).
template <typename T>
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
      if (v > best) {
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
template <typename T>
void pool_plane(const T* xs, T* ys, int32_t* as, const Pool2D& p) {
  // Output columns whose windows lie inside [0, w): x0 >= 0 and x0 + kw <= w.
  const int64_t lo = std::min(p.ow, (p.pw + p.sx - 1) / p.sx);
  const int64_t hi = std::max(
      lo, std::min(p.ow, p.w + p.pw - p.kw >= 0 ? (p.w + p.pw - p.kw) / p.sx + 1 : int64_t{0}));
  for (int64_t oy = 0; oy < p.oh; ++oy) {
    for (int64_t ox = 0; ox < lo; ++ox) pool_window(xs, ys, as, p, oy, ox);
    for (int64_t ox = hi; ox < p.ow; ++ox) pool_window(xs, ys, as, p, oy, ox);
    const int64_t y0 = oy * p.sy - p.ph;
    const int64_t ya = std::max<int64_t>(y0, 0), yb = std::min(y0 + p.kh, p.h);
    if (lo >= hi) continue;
    if (ya >= yb) {
      for (int64_t ox = lo; ox < hi; ++ox) pool_window(xs, ys, as, p, oy, ox);
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
          const int32_t m = -static_cast<int32_t>(v > best);  // all ones if v wins
          arow[ox] = (static_cast<int32_t>(base + ox * sx) & m) | (arow[ox] & ~m);
          yrow[ox] = std::max(best, v);
        }
      }
  }
}

void max_pool_2d_forward(const Array& x, const Pool2D& p, Array& y, Array& argmax) {
  dispatch_floating(x.dtype(), "max_pooling_2d", [&](auto t) {
    using T = decltype(t);
    const T* px = x.data<T>();
    T* py = y.data<T>();
    int32_t* pa = argmax.data<int32_t>();
    const int64_t plane_in = p.h * p.w, plane_out = p.oh * p.ow;
    parallel_for(p.n * p.c, std::max<int64_t>(1, 16384 / std::max<int64_t>(plane_in, 1)),
                 [&](int64_t b, int64_t e) {
                   for (int64_t q = b; q < e; ++q)
                     pool_plane(px + q * plane_in, py + q * plane_out, pa + q * plane_out, p);
                 });
  });
}

void max_pool_2d_backward(const Array& gy, const Array& argmax, const Pool2D& p, Array& gx) {
  dispatch_floating(gx.dtype(), "max_pooling_2d", [&](auto t) {
    using T = decltype(t);
    const T* pg = gy.data<T>();
    const int32_t* pa = argmax.data<int32_t>();
    T* pgx = gx.data<T>();
    const int64_t plane_in = p.h * p.w, plane_out = p.oh * p.ow;
    parallel_for(p.n * p.c, std::max<int64_t>(1, 16384 / std::max<int64_t>(plane_in, 1)),
                 [&](int64_t b, int64_t e) {
                   for (int64_t q = b; q < e; ++q) {
                     T* d = pgx + q * plane_in;
                     const T* g = pg + q * plane_out;
                     const int32_t* a = pa + q * plane_out;
                     for (int64_t i = 0; i < plane_out; ++i)
                       if (a[i] >= 0) d[a[i]] += g[i];
                   }
                 });
  });
}

}  // namespace

void register_max_pooling_2d_kernels() {
  kernels::max_pool_2d_forward.set(CH_DEVICE_CPU, max_pool_2d_forward);
  kernels::max_pool_2d_backward.set(CH_DEVICE_CPU, max_pool_2d_backward);
}

}  // namespace chainerc::cpu
