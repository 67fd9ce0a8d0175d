// max_pooling_2d: the maximum of each (kh, kw) window of every channel of an
// NCHW array, windows shifted by the stride from -pad, as Chainer 1.0.1's
// chainer.functions.max_pooling_2d (cover_all: the output grows so that every
// input position is in some window; padding never wins the maximum).
// Forward keeps the position of each maximum; backward routes gy there.
#include <algorithm>
#include <cstdint>
#include <limits>

#include "backend/cpu/parallel.h"
#include "ops/ops.h"
#include "ops/pooling/pool_util.h"

namespace chainerc::ops {
namespace {

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

class MaxPooling2D final : public Function {
 public:
  explicit MaxPooling2D(const Pool2D& p) : p_(p) {}
  const char* name() const override { return "MaxPooling2D"; }
  // Backward routes gy through the kept argmax: only x's shape is read.
  bool retains_input(size_t) const override { return false; }
  FuncPtr clone() const override { return std::make_shared<MaxPooling2D>(p_); }

  Arrays forward(const Arrays& in) override {
    if (in.size() != 1)
      fail(CH_ERR_INVALID_ARGUMENT, "max_pooling_2d: takes 1 input, got ", in.size());
    const Array& x = in[0];
    bind_pool(p_, "max_pooling_2d", x);
    const Pool2D& p = p_;
    Array y = Array::empty(x.dtype(), Shape{p.n, p.c, p.oh, p.ow}, x.device());
    argmax_ = Array::empty(DType::Int32, y.shape(), x.device());
    dispatch_floating(x.dtype(), "max_pooling_2d", [&](auto t) {
      using T = decltype(t);
      const T* px = x.data<T>();
      T* py = y.data<T>();
      int32_t* pa = argmax_.data<int32_t>();
      const int64_t plane_in = p.h * p.w, plane_out = p.oh * p.ow;
      cpu::parallel_for(p.n * p.c, std::max<int64_t>(1, 16384 / std::max<int64_t>(plane_in, 1)),
                        [&](int64_t b, int64_t e) {
                          for (int64_t q = b; q < e; ++q)
                            pool_plane(px + q * plane_in, py + q * plane_out, pa + q * plane_out,
                                       p);
                        });
    });
    return {y};
  }

  Arrays backward(const Arrays& in, const Arrays& gys) override {
    const Array& x = in[0];
    const Array& gy = gys[0];
    const Pool2D& p = p_;
    Array gx = Array::zeros_like(x);
    dispatch_floating(x.dtype(), "max_pooling_2d", [&](auto t) {
      using T = decltype(t);
      const T* pg = gy.data<T>();
      const int32_t* pa = argmax_.data<int32_t>();
      T* pgx = gx.data<T>();
      const int64_t plane_in = p.h * p.w, plane_out = p.oh * p.ow;
      cpu::parallel_for(p.n * p.c, std::max<int64_t>(1, 16384 / std::max<int64_t>(plane_in, 1)),
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
    return {gx};
  }

 private:
  Pool2D p_;
  Array argmax_;  // int32, y's shape: flat index in the input plane, -1 if none
};

}  // namespace

FuncPtr max_pooling_2d_node(int64_t kh, int64_t kw, int64_t sy, int64_t sx, int64_t ph, int64_t pw,
                            bool cover_all) {
  return std::make_shared<MaxPooling2D>(
      make_pool("max_pooling_2d", kh, kw, sy, sx, ph, pw, cover_all));
}

VarPtr max_pooling_2d(const VarPtr& x, int64_t kh, int64_t kw, int64_t sy, int64_t sx, int64_t ph,
                      int64_t pw, bool cover_all) {
  return apply1(max_pooling_2d_node(kh, kw, sy, sx, ph, pw, cover_all), {x});
}

}  // namespace chainerc::ops
