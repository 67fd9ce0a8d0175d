// local_response_normalization: y = x / (k + alpha * sum of x^2 over the n
// neighbouring channels)^beta, across axis 1 (channels) of an array of rank
// >= 2, as Chainer 1.0.1 (window: channels i - n/2 .. i + n/2, clipped).
// Backward as Chainer: gx = gy * scale - 2 alpha beta x * window_sum(y gy / unit_scale),
// the scales recomputed from x (the node keeps x and y only).
// With double backprop the backward is LocalResponseNormalizationGrad, the
// same kernel as a function of x and gy, and, as Chainer 7's of that name,
// it has no backward itself: the gradient is a variable, but
// differentiating it again is CH_ERR_GRAPH.
#include "kernels/normalization.h"
#include "ops/op_util.h"
#include "ops/ops.h"

namespace chainerc::ops {
namespace {

[[noreturn]] void lrn_not_twice_differentiable() {
  fail(CH_ERR_GRAPH,
       "LocalResponseNormalizationGrad: the gradient of local_response_normalization cannot be "
       "differentiated again (it has no double backward, as in Chainer 7)");
}

// gx from x and gy (y: forward's output, kept).
class LocalResponseNormalizationGrad final : public Function {
 public:
  LocalResponseNormalizationGrad(const kernels::Lrn& p, Array y) : p_(p), y_(std::move(y)) {}
  const char* name() const override { return "LocalResponseNormalizationGrad"; }
  Arrays forward(const Arrays& in) override {
    Array gx = Array::empty_like(in[0]);
    kernels::lrn_backward(in[0], y_, in[1], p_, gx);
    return {gx};
  }
  Arrays backward(const Arrays&, const Arrays&) override { lrn_not_twice_differentiable(); }
  bool has_graph_backward() const override { return true; }  // to fail with the message below
  std::vector<VarPtr> backward_graph(const FuncPtr&, const std::vector<VarPtr>&) override {
    lrn_not_twice_differentiable();
  }

 private:
  kernels::Lrn p_;
  Array y_;
};

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
  CH_GRAPH_BACKWARD {
    return {
        apply1(std::make_shared<LocalResponseNormalizationGrad>(params(), y_), {inputs[0], gy[0]})};
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
