// Convolution2D: y[n, o] = sum_c W[o, c] (*) x[n, c] + b[o] (correlation) on
// NCHW arrays, with stride and zero padding, as Chainer 1.0.1's
// chainer.functions.Convolution2D.
// The kernels (kernels/connection.h) do the work; the CPU's (im2col + GEMM
// per chunk of the batch, one part of it per thread) are described in
// backend/cpu/ops/connection/convolution_2d.cpp.
// The graph backward (double backprop) is gx = conv2d_grad_x(gy, W) with W
// as a parameter variable; the parameters' gradients stay arrays, as
// Linear's. conv2d_of, conv2d_grad_x and conv2d_grad_w (graph_ops.h) are the
// convolution's three linear maps as functions, each differentiated by the
// other two; they run the same two kernels (a deconvolution is the gx of
// conv2d_backward on a zero x, whose weight gradient goes to a scratch
// array: work only a double-backprop pass pays for).
#include <cmath>

#include "core/random.h"
#include "kernels/connection.h"
#include "ops/graph_ops.h"
#include "ops/op_util.h"
#include "ops/ops.h"
#include "ops/parametric.h"

namespace chainerc::ops {
namespace {

// The three maps on arrays. y = W (*) x.
Array conv_y(const Array& x, const Array& W, const kernels::Conv2D& g) {
  Array y = Array::empty(x.dtype(), Shape{x.shape()[0], W.shape()[0], g.oh, g.ow}, x.device());
  kernels::conv2d_forward(x, W, Array(), g, y);
  return y;
}
// gx (x_shape) from gy and W.
Array conv_gx(const Array& gy, const Array& W, const kernels::Conv2D& g, const Shape& x_shape) {
  Array zero_x = Array::zeros(gy.dtype(), x_shape, gy.device());
  Array scratch_gw = Array::zeros_like(W);
  Array no_gb;
  Array gx = Array::zeros(gy.dtype(), x_shape, gy.device());
  kernels::conv2d_backward(zero_x, W, gy, g, scratch_gw, no_gb, gx);
  return gx;
}
// gW (w_shape) from x and gy (W's values are not read without gx).
Array conv_gw(const Array& x, const Array& gy, const kernels::Conv2D& g, const Shape& w_shape) {
  Array gw = Array::zeros(x.dtype(), w_shape, x.device());
  Array shape_of_w = Array::zeros(x.dtype(), w_shape, x.device());
  Array no_gb, no_gx;
  kernels::conv2d_backward(x, shape_of_w, gy, g, gw, no_gb, no_gx);
  return gw;
}

// y = conv(x, W): backward gx = conv_gx(gy, W), gW = conv_gw(x, gy).
class Conv2DOf final : public Function {
 public:
  explicit Conv2DOf(const kernels::Conv2D& g) : g_(g) {}
  const char* name() const override { return "Conv2DOf"; }
  Arrays forward(const Arrays& in) override { return {conv_y(in[0], in[1], g_)}; }
  Arrays backward(const Arrays& in, const Arrays& gy) override {
    return {needs_input_grad(0) ? conv_gx(gy[0], in[1], g_, in[0].shape()) : Array(),
            needs_input_grad(1) ? conv_gw(in[0], gy[0], g_, in[1].shape()) : Array()};
  }
  CH_GRAPH_BACKWARD {
    const VarPtr &x = inputs[0], &W = inputs[1];
    return {needs_input_grad(0) ? conv2d_grad_x(gy[0], W, g_, x->data.shape()) : nullptr,
            needs_input_grad(1) ? conv2d_grad_w(x, gy[0], g_, W->data.shape()) : nullptr};
  }

 private:
  kernels::Conv2D g_;
};

// gx = conv_gx(gy, W): linear in each; <ggx, gx> = <conv(ggx, W), gy>, so
// g_gy = conv(ggx, W) and g_W = conv_gw(ggx, gy).
class Conv2DGradX final : public Function {
 public:
  Conv2DGradX(const kernels::Conv2D& g, Shape x_shape) : g_(g), x_shape_(std::move(x_shape)) {}
  const char* name() const override { return "Conv2DGradX"; }
  Arrays forward(const Arrays& in) override { return {conv_gx(in[0], in[1], g_, x_shape_)}; }
  Arrays backward(const Arrays& in, const Arrays& gy) override {
    return {needs_input_grad(0) ? conv_y(gy[0], in[1], g_) : Array(),
            needs_input_grad(1) ? conv_gw(gy[0], in[0], g_, in[1].shape()) : Array()};
  }
  CH_GRAPH_BACKWARD {
    const VarPtr &g_out = inputs[0], &W = inputs[1];
    return {needs_input_grad(0) ? conv2d_of(gy[0], W, g_) : nullptr,
            needs_input_grad(1) ? conv2d_grad_w(gy[0], g_out, g_, W->data.shape()) : nullptr};
  }

 private:
  kernels::Conv2D g_;
  Shape x_shape_;
};

// gW = conv_gw(x, gy): <ggW, gW> = <conv(x, ggW), gy>, so g_gy = conv(x,
// ggW) and g_x = conv_gx(gy, ggW).
class Conv2DGradW final : public Function {
 public:
  Conv2DGradW(const kernels::Conv2D& g, Shape w_shape) : g_(g), w_shape_(std::move(w_shape)) {}
  const char* name() const override { return "Conv2DGradW"; }
  Arrays forward(const Arrays& in) override { return {conv_gw(in[0], in[1], g_, w_shape_)}; }
  Arrays backward(const Arrays& in, const Arrays& gy) override {
    return {needs_input_grad(0) ? conv_gx(in[1], gy[0], g_, in[0].shape()) : Array(),
            needs_input_grad(1) ? conv_y(in[0], gy[0], g_) : Array()};
  }
  CH_GRAPH_BACKWARD {
    const VarPtr &x = inputs[0], &g_out = inputs[1];
    return {needs_input_grad(0) ? conv2d_grad_x(g_out, gy[0], g_, x->data.shape()) : nullptr,
            needs_input_grad(1) ? conv2d_of(x, gy[0], g_) : nullptr};
  }

 private:
  kernels::Conv2D g_;
  Shape w_shape_;
};

struct ConvConfig {
  int64_t in, out, kh, kw, sy, sx, ph, pw;
  bool nobias;
};

class Convolution2D final : public Function {
 public:
  // Reads W and b at parameters[offset] and [offset + 1] (composites such as
  // Inception keep several convolutions' parameters in one list).
  Convolution2D(const ConvConfig& c, std::shared_ptr<Parameters> p, size_t offset = 0)
      : c_(c), offset_(offset) {
    parameters = std::move(p);
  }
  const char* name() const override { return "Convolution2D"; }
  FuncPtr clone() const override {
    return std::make_shared<Convolution2D>(c_, parameters, offset_);
  }
  FuncPtr rebind(std::shared_ptr<Parameters> p, size_t offset) const {
    return std::make_shared<Convolution2D>(c_, std::move(p), offset);
  }

  Arrays forward(const Arrays& in) override {
    const Array& x = check_input(in);
    const Array& W = (*parameters)[offset_].param;
    const kernels::Conv2D g = geometry(x);
    Array y = Array::empty(x.dtype(), Shape{x.shape()[0], c_.out, g.oh, g.ow}, x.device());
    const Array b = c_.nobias ? Array() : (*parameters)[offset_ + 1].param;
    kernels::conv2d_forward(x, W, b, g, y);
    return {y};
  }

  Arrays backward(const Arrays& in, const Arrays& gys) override {
    const Array& x = in[0];
    Parameter& Wp = (*parameters)[offset_];
    const kernels::Conv2D g = geometry(x);
    if (Wp.param.dtype() != x.dtype() || Wp.grad.dtype() != x.dtype())
      fail(CH_ERR_DTYPE, "convolution_2d: W changed dtype between forward and backward");
    const bool want_gx = needs_input_grad(0);  // not for data (requires_grad 0)
    Array gx = want_gx ? Array::zeros_like(x) : Array();
    Array gb = c_.nobias ? Array() : (*parameters)[offset_ + 1].grad;
    kernels::conv2d_backward(x, Wp.param, gys[0], g, Wp.grad, gb, gx);
    return {gx};
  }

  CH_GRAPH_BACKWARD { return {graph_grad(inputs[0]->data, gy[0], needs_input_grad(0))}; }

  // gW, gb added as arrays (backward's kernel without gx); gx as a function of gy and W.
  VarPtr graph_grad(const Array& x, const VarPtr& gy, bool want_gx) {
    Parameter& Wp = (*parameters)[offset_];
    const kernels::Conv2D g = geometry(x);
    if (Wp.param.dtype() != x.dtype() || Wp.grad.dtype() != x.dtype())
      fail(CH_ERR_DTYPE, "convolution_2d: W changed dtype between forward and backward");
    if (parameter_grads_enabled()) {
      Array gb = c_.nobias ? Array() : (*parameters)[offset_ + 1].grad;
      Array no_gx;
      kernels::conv2d_backward(x, Wp.param, gy->data, g, Wp.grad, gb, no_gx);
    }
    if (!want_gx) return nullptr;
    return conv2d_grad_x(gy, parameter_variable(*this, offset_), g, x.shape());
  }

 private:
  const Array& check_input(const Arrays& in) const {
    if (in.size() != 1)
      fail(CH_ERR_INVALID_ARGUMENT, "convolution_2d: takes 1 input, got ", in.size());
    const Array& x = in[0];
    check_float("convolution_2d", x);
    if (x.ndim() != 4)
      fail(CH_ERR_SHAPE, "convolution_2d: x must be 4-d (batch, channels, height, width); got a ",
           x.describe());
    const Array& W = (*parameters)[offset_].param;
    if (x.dtype() != W.dtype())
      fail(CH_ERR_DTYPE, "convolution_2d: x is ", dtype_name(x.dtype()), " but W is ",
           dtype_name(W.dtype()));
    if (x.shape()[1] != c_.in)
      fail(CH_ERR_SHAPE, "convolution_2d: x has ", x.shape()[1], " channels (shape ",
           x.shape().to_string(), ") but the function has in_channels ", c_.in);
    return x;
  }

  kernels::Conv2D geometry(const Array& x) const {
    kernels::Conv2D g{};
    g.c = c_.in;
    g.h = x.shape()[2];
    g.w = x.shape()[3];
    g.kh = c_.kh;
    g.kw = c_.kw;
    g.sy = c_.sy;
    g.sx = c_.sx;
    g.ph = c_.ph;
    g.pw = c_.pw;
    const char* who = "convolution_2d";
    if (!window_fits(g.h, g.kh, g.ph) || !window_fits(g.w, g.kw, g.pw))
      fail(CH_ERR_SHAPE, who, ": the ", c_.kh, "x", c_.kw, " kernel is larger than the padded ",
           g.h, "x", g.w, " input (pad ", c_.ph, ", ", c_.pw, ")");
    g.oh = window_count(g.h, g.kh, g.sy, g.ph, false, who, "height");
    g.ow = window_count(g.w, g.kw, g.sx, g.pw, false, who, "width");
    // The kernels' column buffer holds (c * kh * kw) x (oh * ow) elements.
    checked_mul(checked_mul(checked_mul(g.c, g.kh, who, "patch size"), g.kw, who, "patch size"),
                checked_mul(g.oh, g.ow, who, "output pixels"), who, "column buffer elements");
    return g;
  }

  ConvConfig c_;
  size_t offset_;
};

}  // namespace

VarPtr conv2d_of(const VarPtr& x, const VarPtr& W, const kernels::Conv2D& g) {
  return apply1(std::make_shared<Conv2DOf>(g), {x, W});
}
VarPtr conv2d_grad_x(const VarPtr& gy, const VarPtr& W, const kernels::Conv2D& g,
                     const Shape& x_shape) {
  return apply1(std::make_shared<Conv2DGradX>(g, x_shape), {gy, W});
}
VarPtr conv2d_grad_w(const VarPtr& x, const VarPtr& gy, const kernels::Conv2D& g,
                     const Shape& w_shape) {
  return apply1(std::make_shared<Conv2DGradW>(g, w_shape), {x, gy});
}

VarPtr convolution_2d_graph_grad(const FuncPtr& conv, const Array& x, const VarPtr& gy,
                                 bool want_gx) {
  auto* c = dynamic_cast<Convolution2D*>(conv.get());
  if (!c)
    fail(CH_ERR_INTERNAL, "convolution_2d_graph_grad: '", conv->name(), "' is not a Convolution2D");
  return c->graph_grad(x, gy, want_gx);
}

FuncPtr convolution_2d_rebind(const FuncPtr& conv, std::shared_ptr<Parameters> params,
                              size_t offset) {
  auto* c = dynamic_cast<const Convolution2D*>(conv.get());
  if (!c)
    fail(CH_ERR_INTERNAL, "convolution_2d_rebind: '", conv->name(), "' is not a Convolution2D");
  return c->rebind(std::move(params), offset);
}

FuncPtr convolution_2d_new(int64_t in_channels, int64_t out_channels, int64_t kh, int64_t kw,
                           int64_t sy, int64_t sx, int64_t ph, int64_t pw, DType dtype,
                           double wscale, double bias, bool nobias, const Array* initial_W,
                           const Array* initial_b) {
  const char* who = "convolution_2d";
  if (in_channels <= 0 || out_channels <= 0)
    fail(CH_ERR_INVALID_ARGUMENT, who, ": in_channels ", in_channels, " and out_channels ",
         out_channels, " must be positive");
  if (kh <= 0 || kw <= 0)
    fail(CH_ERR_INVALID_ARGUMENT, who, ": ksize (", kh, ", ", kw, ") must be positive");
  if (sy <= 0 || sx <= 0)
    fail(CH_ERR_INVALID_ARGUMENT, who, ": stride (", sy, ", ", sx, ") must be positive");
  if (ph < 0 || pw < 0)
    fail(CH_ERR_INVALID_ARGUMENT, who, ": pad (", ph, ", ", pw, ") must not be negative");
  if (!is_floating(dtype))
    fail(CH_ERR_DTYPE, who, ": dtype ", dtype_name(dtype),
         " is not supported (float32 or float64)");
  auto params = std::make_shared<Parameters>();
  const Shape ws{out_channels, in_channels, kh, kw};
  Array W = initial_parameter(who, "W", initial_W, dtype, ws);
  if (!initial_W)
    random::fill_normal(W, 0.0,
                        wscale * std::sqrt(1.0 / static_cast<double>(checked_mul(
                                                     checked_mul(in_channels, kh, who, "fan-in"),
                                                     kw, who, "fan-in"))));
  params->push_back(Parameter{"W", W, Array::zeros(dtype, ws)});
  if (!nobias) {
    Array b = initial_parameter(who, "b", initial_b, dtype, Shape{out_channels});
    if (!initial_b) b.fill(bias);
    params->push_back(Parameter{"b", b, Array::zeros(dtype, Shape{out_channels})});
  }
  ConvConfig c{in_channels, out_channels, kh, kw, sy, sx, ph, pw, nobias};
  return std::make_shared<Convolution2D>(c, std::move(params));
}

}  // namespace chainerc::ops
