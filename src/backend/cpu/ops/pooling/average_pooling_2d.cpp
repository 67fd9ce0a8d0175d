// CPU kernels of average_pooling_2d: one (h, w) plane per task of the pool.
#include <algorithm>
#include <cstdint>

#include "backend/cpu/kernel_list.h"
#include "backend/cpu/parallel.h"
#include "kernels/pooling.h"

namespace chainerc::cpu {
namespace {

using kernels::Pool2D;

void average_pool_2d_forward(const Array& x, const Pool2D& p, Array& y) {
  dispatch_floating(x.dtype(), "average_pooling_2d", [&](auto t) {
    using T = decltype(t);
    const T* px = x.data<T>();
    T* py = y.data<T>();
    const T scale = T(1) / static_cast<T>(p.kh * p.kw);
    const int64_t plane_in = p.h * p.w, plane_out = p.oh * p.ow;
    parallel_for(p.n * p.c, std::max<int64_t>(1, 16384 / std::max<int64_t>(plane_in, 1)),
                 [&](int64_t b, int64_t e) {
                   for (int64_t q = b; q < e; ++q) {
                     const T* xs = px + q * plane_in;
                     T* ys = py + q * plane_out;
                     for (int64_t oy = 0; oy < p.oh; ++oy) {
                       const int64_t y0 = oy * p.sy - p.ph;
                       const int64_t ya = std::max<int64_t>(y0, 0), yb = std::min(y0 + p.kh, p.h);
                       for (int64_t ox = 0; ox < p.ow; ++ox) {
                         const int64_t x0 = ox * p.sx - p.pw;
                         const int64_t xa = std::max<int64_t>(x0, 0), xb = std::min(x0 + p.kw, p.w);
                         T s = 0;
                         for (int64_t iy = ya; iy < yb; ++iy)
                           for (int64_t ix = xa; ix < xb; ++ix) s += xs[iy * p.w + ix];
                         ys[oy * p.ow + ox] = s * scale;
                       }
                     }
                   }
                 });
  });
}

void average_pool_2d_backward(const Array& gy, const Pool2D& p, Array& gx) {
  dispatch_floating(gx.dtype(), "average_pooling_2d", [&](auto t) {
    using T = decltype(t);
    const T* pg = gy.data<T>();
    T* pgx = gx.data<T>();
    const T scale = T(1) / static_cast<T>(p.kh * p.kw);
    const int64_t plane_in = p.h * p.w, plane_out = p.oh * p.ow;
    parallel_for(p.n * p.c, std::max<int64_t>(1, 16384 / std::max<int64_t>(plane_in, 1)),
                 [&](int64_t b, int64_t e) {
                   for (int64_t q = b; q < e; ++q) {
                     T* d = pgx + q * plane_in;
                     const T* g = pg + q * plane_out;
                     for (int64_t oy = 0; oy < p.oh; ++oy) {
                       const int64_t y0 = oy * p.sy - p.ph;
                       const int64_t ya = std::max<int64_t>(y0, 0), yb = std::min(y0 + p.kh, p.h);
                       for (int64_t ox = 0; ox < p.ow; ++ox) {
                         const int64_t x0 = ox * p.sx - p.pw;
                         const int64_t xa = std::max<int64_t>(x0, 0), xb = std::min(x0 + p.kw, p.w);
                         const T v = g[oy * p.ow + ox] * scale;
                         for (int64_t iy = ya; iy < yb; ++iy)
                           for (int64_t ix = xa; ix < xb; ++ix) d[iy * p.w + ix] += v;
                       }
                     }
                   }
                 });
  });
}

}  // namespace

void register_average_pooling_2d_kernels() {
  kernels::average_pool_2d_forward.set(CH_DEVICE_CPU, average_pool_2d_forward);
  kernels::average_pool_2d_backward.set(CH_DEVICE_CPU, average_pool_2d_backward);
}

}  // namespace chainerc::cpu
