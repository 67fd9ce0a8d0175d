// average_pooling_2d: the mean of each (kh, kw) window of every channel of an
// NCHW array, as Chainer 1.0.1's chainer.functions.average_pooling_2d: padding
// counts as zeros (the sum is always divided by kh * kw) and there is no
// cover_all mode (output extent (size + 2 pad - k) / stride + 1).
// The graph backward (double backprop) is AveragePooling2DGrad, gy spread
// over the windows as a function of gy; its backward is the average pooling
// again (the two are each other's adjoint).
#include "kernels/pooling.h"
#include "ops/ops.h"
#include "ops/pooling/pool_util.h"

namespace chainerc::ops {
namespace {

VarPtr average_pool_of(const Pool2D& p, const VarPtr& x);

// gx (x's shape) = gy / (kh kw) spread over each window.
class AveragePooling2DGrad final : public Function {
 public:
  AveragePooling2DGrad(const Pool2D& p, Shape x_shape) : p_(p), x_shape_(std::move(x_shape)) {}
  const char* name() const override { return "AveragePooling2DGrad"; }
  bool retains_input(size_t) const override { return false; }
  Arrays forward(const Arrays& in) override {
    Array gx = Array::zeros(in[0].dtype(), x_shape_, in[0].device());
    kernels::average_pool_2d_backward(in[0], p_, gx);
    return {gx};
  }
  Arrays backward(const Arrays&, const Arrays& ggx) override {
    Array ggy = Array::empty(ggx[0].dtype(), Shape{p_.n, p_.c, p_.oh, p_.ow}, ggx[0].device());
    kernels::average_pool_2d_forward(ggx[0], p_, ggy);
    return {ggy};
  }
  CH_GRAPH_BACKWARD { return {average_pool_of(p_, gy[0])}; }

 private:
  Pool2D p_;
  Shape x_shape_;
};

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
    kernels::average_pool_2d_forward(x, p, y);
    return {y};
  }

  Arrays backward(const Arrays& in, const Arrays& gys) override {
    const Array& x = in[0];
    const Array& gy = gys[0];
    const Pool2D& p = p_;
    Array gx = Array::zeros_like(x);
    kernels::average_pool_2d_backward(gy, p, gx);
    return {gx};
  }
  CH_GRAPH_BACKWARD {
    return {apply1(std::make_shared<AveragePooling2DGrad>(p_, inputs[0]->data.shape()), {gy[0]})};
  }

 private:
  Pool2D p_;
};

VarPtr average_pool_of(const Pool2D& p, const VarPtr& x) {
  return apply1(std::make_shared<AveragePooling2D>(p), {x});
}

}  // namespace

VarPtr average_pooling_2d(const VarPtr& x, int64_t kh, int64_t kw, int64_t sy, int64_t sx,
                          int64_t ph, int64_t pw) {
  return apply1(std::make_shared<AveragePooling2D>(
                    make_pool("average_pooling_2d", kh, kw, sy, sx, ph, pw, false)),
                {x});
}

}  // namespace chainerc::ops
