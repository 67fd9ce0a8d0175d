// local_response_normalization: y = x / (k + alpha * sum of x^2 over the n
// neighbouring channels)^beta, across axis 1 (channels) of an array of rank
// >= 2, as Chainer 1.0.1 (window: channels i - n/2 .. i + n/2, clipped).
// Backward as Chainer: gx = gy * scale - 2 alpha beta x * window_sum(y gy / unit_scale),
// the scales recomputed from x (the node keeps x and y only).
#include "kernels/normalization.h"
#include "ops/op_util.h"
#include "ops/ops.h"

namespace chainerc::ops {
namespace {

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
    kernels::lrn_forward(x, params(), y);
    y_ = y;
    return {y};
  }

  Arrays backward(const Arrays& in, const Arrays& gys) override {
    const Array& x = in[0];
    const Array& gy = gys[0];
    Array gx = Array::empty_like(x);
    kernels::lrn_backward(x, y_, gy, params(), gx);
    return {gx};
  }

 private:
  kernels::Lrn params() const { return kernels::Lrn{n_, k_, alpha_, beta_}; }

  int64_t n_;
  double k_, alpha_, beta_;
  Array y_;  // forward's output (with x, what backward reads)
};

}  // namespace

VarPtr local_response_normalization(const VarPtr& x, int64_t n, double k, double alpha,
                                    double beta) {
  if (n <= 0)
    fail(CH_ERR_INVALID_ARGUMENT, "local_response_normalization: n ", n, " must be positive");
  return apply1(std::make_shared<LocalResponseNormalization>(n, k, alpha, beta), {x});
}

}  // namespace chainerc::ops
