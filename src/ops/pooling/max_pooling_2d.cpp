// max_pooling_2d: the maximum of each (kh, kw) window of every channel of an
// NCHW array, windows shifted by the stride from -pad, as Chainer 1.0.1's
// chainer.functions.max_pooling_2d (cover_all: the output grows so that every
// input position is in some window; padding never wins the maximum).
// The node keeps the argmax when the device's forward gives one (the CPU's),
// else x and y; backward routes gy to the first position of each window
// where x equals y (the first maximum).
// The graph backward (double backprop) is MaxPooling2DGrad, gy routed to
// the first maxima as a function of gy; its backward, MaxPooling2DGather,
// reads the gradient at the same positions, and its backward routes again.
#include "kernels/pooling.h"
#include "ops/graph_ops.h"
#include "ops/ops.h"
#include "ops/pooling/pool_util.h"

namespace chainerc::ops {
namespace {

// Where one application routes its gradients: forward's geometry, x and y
// or the argmax (kernels/pooling.h).
struct MaxRouting {
  Pool2D p;
  Array x, y, argmax;
};

VarPtr max_pool_gather(const std::shared_ptr<const MaxRouting>& r, const VarPtr& ggx);

// gx = gy routed to each window's first maximum (linear in gy).
class MaxPooling2DGrad final : public Function {
 public:
  explicit MaxPooling2DGrad(std::shared_ptr<const MaxRouting> r) : r_(std::move(r)) {}
  const char* name() const override { return "MaxPooling2DGrad"; }
  bool retains_input(size_t) const override { return false; }
  Arrays forward(const Arrays& in) override {
    Array gx = Array::zeros(in[0].dtype(), r_->x.shape(), in[0].device());
    kernels::max_pool_2d_backward(r_->x, r_->y, r_->argmax, in[0], r_->p, gx);
    return {gx};
  }
  Arrays backward(const Arrays&, const Arrays& ggx) override {
    Array ggy =
        Array::empty(ggx[0].dtype(), Shape{r_->p.n, r_->p.c, r_->p.oh, r_->p.ow}, ggx[0].device());
    kernels::max_pool_2d_gather(r_->x, r_->y, r_->argmax, ggx[0], r_->p, ggy);
    return {ggy};
  }
  CH_GRAPH_BACKWARD { return {max_pool_gather(r_, gy[0])}; }

 private:
  std::shared_ptr<const MaxRouting> r_;
};

// ggy = ggx at each window's first maximum: the adjoint of MaxPooling2DGrad.
class MaxPooling2DGather final : public Function {
 public:
  explicit MaxPooling2DGather(std::shared_ptr<const MaxRouting> r) : r_(std::move(r)) {}
  const char* name() const override { return "MaxPooling2DGather"; }
  bool retains_input(size_t) const override { return false; }
  Arrays forward(const Arrays& in) override {
    Array ggy =
        Array::empty(in[0].dtype(), Shape{r_->p.n, r_->p.c, r_->p.oh, r_->p.ow}, in[0].device());
    kernels::max_pool_2d_gather(r_->x, r_->y, r_->argmax, in[0], r_->p, ggy);
    return {ggy};
  }
  Arrays backward(const Arrays&, const Arrays& g) override {
    Array gx = Array::zeros(g[0].dtype(), r_->x.shape(), g[0].device());
    kernels::max_pool_2d_backward(r_->x, r_->y, r_->argmax, g[0], r_->p, gx);
    return {gx};
  }
  CH_GRAPH_BACKWARD { return {apply1(std::make_shared<MaxPooling2DGrad>(r_), {gy[0]})}; }

 private:
  std::shared_ptr<const MaxRouting> r_;
};

VarPtr max_pool_gather(const std::shared_ptr<const MaxRouting>& r, const VarPtr& ggx) {
  return apply1(std::make_shared<MaxPooling2DGather>(r), {ggx});
}

class MaxPooling2D final : public Function {
 public:
  explicit MaxPooling2D(const Pool2D& p) : p_(p) {}
  const char* name() const override { return "MaxPooling2D"; }
  // Asked after forward: with an argmax (the CPU's forward) backward routes
  // by it and reads only x's shape; without (CUDA), it reads x and y.
  bool retains_input(size_t) const override { return !argmax_.defined(); }
  FuncPtr clone() const override { return std::make_shared<MaxPooling2D>(p_); }

  Arrays forward(const Arrays& in) override {
    if (in.size() != 1)
      fail(CH_ERR_INVALID_ARGUMENT, "max_pooling_2d: takes 1 input, got ", in.size());
    const Array& x = in[0];
    bind_pool(p_, "max_pooling_2d", x);
    const Pool2D& p = p_;
    Array y = Array::empty(x.dtype(), Shape{p.n, p.c, p.oh, p.ow}, x.device());
    argmax_ = Array();
    kernels::max_pool_2d_forward(x, p, y, argmax_);
    y_ = argmax_.defined() ? Array() : y;
    return {y};
  }

  Arrays backward(const Arrays& in, const Arrays& gys) override {
    const Array& x = in[0];
    const Array& gy = gys[0];
    const Pool2D& p = p_;
    Array gx = Array::zeros_like(x);
    kernels::max_pool_2d_backward(x, y_, argmax_, gy, p, gx);
    return {gx};
  }
  CH_GRAPH_BACKWARD { return {graph_grad(inputs[0]->data, gy[0])}; }

  VarPtr graph_grad(const Array& x, const VarPtr& gy) const {
    auto r = std::make_shared<MaxRouting>(MaxRouting{p_, x, y_, argmax_});
    return apply1(std::make_shared<MaxPooling2DGrad>(std::move(r)), {gy});
  }

 private:
  Pool2D p_;
  Array y_;       // forward's output, when forward gave no argmax
  Array argmax_;  // int32, y's shape, or undefined (see kernels/pooling.h)
};

}  // namespace

VarPtr max_pooling_2d_grad(const FuncPtr& pool, const Array& x, const VarPtr& gy) {
  auto* m = dynamic_cast<const MaxPooling2D*>(pool.get());
  if (!m) fail(CH_ERR_INTERNAL, "max_pooling_2d_grad: '", pool->name(), "' is not a max pooling");
  return m->graph_grad(x, gy);
}

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
