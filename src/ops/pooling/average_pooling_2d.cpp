// average_pooling_2d: the mean of each (kh, kw) window of every channel of an
// NCHW array, as Chainer 1.0.1's chainer.functions.average_pooling_2d: padding
// counts as zeros (the sum is always divided by kh * kw) and there is no
// cover_all mode (output extent (size + 2 pad - k) / stride + 1).
#include <algorithm>
#include <cstdint>

#include "backend/cpu/parallel.h"
#include "ops/ops.h"
#include "ops/pooling/pool_util.h"

namespace chainerc::ops {
namespace {

class AveragePooling2D final : public Function {
 public:
  explicit AveragePooling2D(const Pool2D& p) : p_(p) {}
  const char* name() const override { return "AveragePooling2D"; }
  // Backward spreads gy over the windows: only x's shape is read.
  bool retains_input(size_t) const override { return false; }
  FuncPtr clone() const override { return std::make_shared<AveragePooling2D>(p_); }

  Arrays forward(const Arrays& in) override {
    if (in.size() != 1)
      fail(CH_ERR_INVALID_ARGUMENT, "average_pooling_2d: takes 1 input, got ", in.size());
    const Array& x = in[0];
    bind_pool(p_, "average_pooling_2d", x);
    const Pool2D& p = p_;
    Array y = Array::empty(x.dtype(), Shape{p.n, p.c, p.oh, p.ow}, x.device());
    dispatch_floating(x.dtype(), "average_pooling_2d", [&](auto t) {
      using T = decltype(t);
      const T* px = x.data<T>();
      T* py = y.data<T>();
      const T scale = T(1) / static_cast<T>(p.kh * p.kw);
      const int64_t plane_in = p.h * p.w, plane_out = p.oh * p.ow;
      cpu::parallel_for(
          p.n * p.c, std::max<int64_t>(1, 16384 / std::max<int64_t>(plane_in, 1)),
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
    return {y};
  }

  Arrays backward(const Arrays& in, const Arrays& gys) override {
    const Array& x = in[0];
    const Array& gy = gys[0];
    const Pool2D& p = p_;
    Array gx = Array::zeros_like(x);
    dispatch_floating(x.dtype(), "average_pooling_2d", [&](auto t) {
      using T = decltype(t);
      const T* pg = gy.data<T>();
      T* pgx = gx.data<T>();
      const T scale = T(1) / static_cast<T>(p.kh * p.kw);
      const int64_t plane_in = p.h * p.w, plane_out = p.oh * p.ow;
      cpu::parallel_for(
          p.n * p.c, std::max<int64_t>(1, 16384 / std::max<int64_t>(plane_in, 1)),
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
    return {gx};
  }

 private:
  Pool2D p_;
};

}  // namespace

VarPtr average_pooling_2d(const VarPtr& x, int64_t kh, int64_t kw, int64_t sy, int64_t sx,
                          int64_t ph, int64_t pw) {
  return apply1(std::make_shared<AveragePooling2D>(
                    make_pool("average_pooling_2d", kh, kw, sy, sx, ph, pw, false)),
                {x});
}

}  // namespace chainerc::ops
