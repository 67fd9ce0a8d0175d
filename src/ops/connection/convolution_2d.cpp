// Convolution2D: y[n, o] = sum_c W[o, c] (*) x[n, c] + b[o] (correlation) on
// NCHW arrays, with stride and zero padding, as Chainer 1.0.1's
// chainer.functions.Convolution2D.
// The kernels (kernels/connection.h) do the work; the CPU's (im2col + GEMM
// per chunk of the batch, one part of it per thread) are described in
// backend/cpu/ops/connection/convolution_2d.cpp.
#include <cmath>

#include "core/random.h"
#include "kernels/connection.h"
#include "ops/op_util.h"
#include "ops/ops.h"
#include "ops/parametric.h"

namespace chainerc::ops {
namespace {

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
