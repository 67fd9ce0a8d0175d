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

// Whether v replaces best as the window's maximum so far: a larger value, or
// a NaN (which then stays: nothing is larger than a NaN, and a later NaN
// replaces it by a NaN).
template <typename T>
inline bool wins(T v, T best) {
  return v > best || v != v;
}

// One output position whose window may reach into the padding: the maximum
// of the window's part inside the plane (-inf for a window wholly in the
// padding).
template <typename T>
void pool_window(const T* xs, T* ys, const Pool2D& p, int64_t oy, int64_t ox) {
  const int64_t y0 = oy * p.sy - p.ph, x0 = ox * p.sx - p.pw;
  const int64_t ya = std::max<int64_t>(y0, 0), yb = std::min(y0 + p.kh, p.h);
  const int64_t xa = std::max<int64_t>(x0, 0), xb = std::min(x0 + p.kw, p.w);
  const int64_t o = oy * p.ow + ox;
  if (ya >= yb || xa >= xb) {
    ys[o] = -std::numeric_limits<T>::infinity();
    return;
  }
  T best = xs[ya * p.w + xa];
  for (int64_t iy = ya; iy < yb; ++iy)
    for (int64_t ix = xa; ix < xb; ++ix) {
      const T v = xs[iy * p.w + ix];
      best = wins(v, best) ? v : best;
    }
  ys[o] = best;
}

// One (h, w) plane. Windows wholly inside the row range of the plane's
// columns are done a window offset (ky, kx) at a time across the whole
// output row: branch-free selects over consecutive outputs that the compiler
// vectorises (a window at a time, maxima of random data mispredict half the
// time and the loop overhead dominates 2x2 windows).
template <typename T>
void pool_plane(const T* xs, T* ys, const Pool2D& p) {
  // Output columns whose windows lie inside [0, w): x0 >= 0 and x0 + kw <= w.
  const int64_t lo = std::min(p.ow, (p.pw + p.sx - 1) / p.sx);
  const int64_t hi = std::max(
      lo, std::min(p.ow, p.w + p.pw - p.kw >= 0 ? (p.w + p.pw - p.kw) / p.sx + 1 : int64_t{0}));
  for (int64_t oy = 0; oy < p.oh; ++oy) {
    for (int64_t ox = 0; ox < lo; ++ox) pool_window(xs, ys, p, oy, ox);
    for (int64_t ox = hi; ox < p.ow; ++ox) pool_window(xs, ys, p, oy, ox);
    const int64_t y0 = oy * p.sy - p.ph;
    const int64_t ya = std::max<int64_t>(y0, 0), yb = std::min(y0 + p.kh, p.h);
    if (lo >= hi) continue;
    if (ya >= yb) {
      for (int64_t ox = lo; ox < hi; ++ox) pool_window(xs, ys, p, oy, ox);
      continue;
    }
    T* __restrict yrow = ys + oy * p.ow;
    const int64_t sx = p.sx;
    for (int64_t iy = ya; iy < yb; ++iy)
      for (int64_t kx = 0; kx < p.kw; ++kx) {
        const T* __restrict r = xs + iy * p.w - p.pw + kx;  // (iy, ox * sx - pw + kx) at ox 0
        if (iy == ya && kx == 0) {
          for (int64_t ox = lo; ox < hi; ++ox) yrow[ox] = r[ox * sx];
          continue;
        }
        for (int64_t ox = lo; ox < hi; ++ox) {
          const T v = r[ox * sx], best = yrow[ox];
          yrow[ox] = wins(v, best) ? v : best;
        }
      }
  }
}

void max_pool_2d_forward(const Array& x, const Pool2D& p, Array& y) {
  dispatch_floating(x.dtype(), "max_pooling_2d", [&](auto t) {
    using T = decltype(t);
    const T* px = x.data<T>();
    T* py = y.data<T>();
    const int64_t plane_in = p.h * p.w, plane_out = p.oh * p.ow;
    parallel_for(p.n * p.c, std::max<int64_t>(1, 16384 / std::max<int64_t>(plane_in, 1)),
                 [&](int64_t b, int64_t e) {
                   for (int64_t q = b; q < e; ++q)
                     pool_plane(px + q * plane_in, py + q * plane_out, p);
                 });
  });
}

// One plane's backward: each output's gradient goes to the first position of
// its window (in window order) holding forward's maximum (a NaN for a NaN).
template <typename T>
void unpool_plane(const T* xs, const T* ys, const T* gs, T* d, const Pool2D& p) {
  for (int64_t oy = 0; oy < p.oh; ++oy) {
    const int64_t y0 = oy * p.sy - p.ph;
    const int64_t ya = std::max<int64_t>(y0, 0), yb = std::min(y0 + p.kh, p.h);
    for (int64_t ox = 0; ox < p.ow; ++ox) {
      const int64_t x0 = ox * p.sx - p.pw;
      const int64_t xa = std::max<int64_t>(x0, 0), xb = std::min(x0 + p.kw, p.w);
      const int64_t o = oy * p.ow + ox;
      const T target = ys[o];
      const bool nan = target != target;
      for (int64_t iy = ya; iy < yb; ++iy) {
        const T* r = xs + iy * p.w;
        int64_t ix = xa;
        while (ix < xb && !(r[ix] == target || (nan && r[ix] != r[ix]))) ++ix;
        if (ix < xb) {
          d[iy * p.w + ix] += gs[o];
          break;
        }
      }
    }
  }
}

void max_pool_2d_backward(const Array& x, const Array& y, const Array& gy, const Pool2D& p,
                          Array& gx) {
  dispatch_floating(gx.dtype(), "max_pooling_2d", [&](auto t) {
    using T = decltype(t);
    const T* px = x.data<T>();
    const T* py = y.data<T>();
    const T* pg = gy.data<T>();
    T* pgx = gx.data<T>();
    const int64_t plane_in = p.h * p.w, plane_out = p.oh * p.ow;
    parallel_for(p.n * p.c, std::max<int64_t>(1, 16384 / std::max<int64_t>(plane_in, 1)),
                 [&](int64_t b, int64_t e) {
                   for (int64_t q = b; q < e; ++q)
                     unpool_plane(px + q * plane_in, py + q * plane_out, pg + q * plane_out,
                                  pgx + q * plane_in, p);
                 });
  });
}

}  // namespace

void register_max_pooling_2d_kernels() {
  kernels::max_pool_2d_forward.set(CH_DEVICE_CPU, max_pool_2d_forward);
  kernels::max_pool_2d_backward.set(CH_DEVICE_CPU, max_pool_2d_backward);
}

}  // namespace chainerc::cpu
