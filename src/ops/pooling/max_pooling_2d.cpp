// max_pooling_2d: the maximum of each (kh, kw) window of every channel of an
// NCHW array, windows shifted by the stride from -pad, as Chainer 1.0.1's
// chainer.functions.max_pooling_2d (cover_all: the output grows so that every
// input position is in some window; padding never wins the maximum).
// The node keeps the argmax when the device's forward gives one (the CPU's),
// else x and y; backward routes gy to the first position of each window
// where x equals y (the first maximum).
#include "kernels/pooling.h"
#include "ops/ops.h"
#include "ops/pooling/pool_util.h"

namespace chainerc::ops {
namespace {

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

 private:
  Pool2D p_;
  Array y_;       // forward's output, when forward gave no argmax
  Array argmax_;  // int32, y's shape, or undefined (see kernels/pooling.h)
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
