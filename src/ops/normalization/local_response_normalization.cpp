// local_response_normalization: y = x / (k + alpha * sum of x^2 over the n
// neighbouring channels)^beta, across axis 1 (channels) of an array of rank
// >= 2, as Chainer 1.0.1 (window: channels i - n/2 .. i + n/2, clipped).
// Backward as Chainer: gx = gy * scale - 2 alpha beta x * window_sum(y gy / unit_scale).
#include <algorithm>
#include <cmath>
#include <vector>

#include "backend/cpu/parallel.h"
#include "ops/op_util.h"
#include "ops/ops.h"

namespace chainerc::ops {
namespace {

// out[c, r] = sum over channels j in [c - half, c + half] of in[j, r] for a
// (C, R) block, by a running window (per position r).
template <typename T>
void window_sum(const T* in, T* out, int64_t C, int64_t R, int64_t half) {
  std::fill(out, out + C * R, T(0));
  for (int64_t c = 0; c < C; ++c) {
    const int64_t lo = std::max<int64_t>(0, c - half), hi = std::min(C - 1, c + half);
    T* o = out + c * R;
    for (int64_t j = lo; j <= hi; ++j) {
      const T* s = in + j * R;
      for (int64_t r = 0; r < R; ++r) o[r] += s[r];
    }
  }
}

class LocalResponseNormalization final : public Function {
 public:
  LocalResponseNormalization(int64_t n, double k, double alpha, double beta)
      : n_(n), k_(k), alpha_(alpha), beta_(beta) {}
  const char* name() const override { return "LocalResponseNormalization"; }

  Arrays forward(const Arrays& in) override {
    const Array& x = in[0];
    const char* who = "local_response_normalization";
    check_float(who, x);
    if (x.ndim() < 2)
      fail(CH_ERR_SHAPE, who, ": x must have at least 2 dimensions (batch, channels, ...); got a ",
           x.describe());
    Array y = Array::empty_like(x);
    scale_ = Array::empty_like(x);
    unit_scale_ = Array::empty_like(x);
    const int64_t N = x.shape()[0], C = x.shape()[1], R = N > 0 && C > 0 ? x.size() / (N * C) : 0;
    dispatch_floating(x.dtype(), who, [&](auto t) {
      using T = decltype(t);
      const T* px = x.data<T>();
      T* py = y.data<T>();
      T* ps = scale_.data<T>();
      T* pu = unit_scale_.data<T>();
      const T k = static_cast<T>(k_), alpha = static_cast<T>(alpha_), beta = static_cast<T>(beta_);
      cpu::parallel_for(N, 1, [&](int64_t b, int64_t e) {
        std::vector<T> sq(static_cast<size_t>(C * R));
        for (int64_t i = b; i < e; ++i) {
          const int64_t off = i * C * R;
          for (int64_t q = 0; q < C * R; ++q) sq[q] = px[off + q] * px[off + q];
          window_sum(sq.data(), pu + off, C, R, n_ / 2);
          for (int64_t q = 0; q < C * R; ++q) {
            const T u = k + alpha * pu[off + q];
            pu[off + q] = u;
            ps[off + q] = std::pow(u, -beta);
            py[off + q] = px[off + q] * ps[off + q];
          }
        }
      });
    });
    y_ = y;
    return {y};
  }

  Arrays backward(const Arrays& in, const Arrays& gys) override {
    const Array& x = in[0];
    const Array& gy = gys[0];
    Array gx = Array::empty_like(x);
    const int64_t N = x.shape()[0], C = x.shape()[1], R = N > 0 && C > 0 ? x.size() / (N * C) : 0;
    dispatch_floating(x.dtype(), "local_response_normalization", [&](auto t) {
      using T = decltype(t);
      const T* px = x.data<T>();
      const T* py = y_.data<T>();
      const T* pg = gy.data<T>();
      const T* ps = scale_.data<T>();
      const T* pu = unit_scale_.data<T>();
      T* pgx = gx.data<T>();
      const T c2 = static_cast<T>(2 * alpha_ * beta_);
      cpu::parallel_for(N, 1, [&](int64_t b, int64_t e) {
        std::vector<T> summand(static_cast<size_t>(C * R)), sum(static_cast<size_t>(C * R));
        for (int64_t i = b; i < e; ++i) {
          const int64_t off = i * C * R;
          for (int64_t q = 0; q < C * R; ++q) summand[q] = py[off + q] * pg[off + q] / pu[off + q];
          window_sum(summand.data(), sum.data(), C, R, n_ / 2);
          for (int64_t q = 0; q < C * R; ++q)
            pgx[off + q] = pg[off + q] * ps[off + q] - c2 * px[off + q] * sum[q];
        }
      });
    });
    return {gx};
  }

 private:
  int64_t n_;
  double k_, alpha_, beta_;
  Array y_, scale_, unit_scale_;
};

}  // namespace

VarPtr local_response_normalization(const VarPtr& x, int64_t n, double k, double alpha,
                                    double beta) {
  if (n <= 0)
    fail(CH_ERR_INVALID_ARGUMENT, "local_response_normalization: n ", n, " must be positive");
  return apply1(std::make_shared<LocalResponseNormalization>(n, k, alpha, beta), {x});
}

}  // namespace chainerc::ops
