// PReLU: y = x where x >= 0, W x where x < 0 (Chainer's F.PReLU(shape=(),
// init=0.25)). The parameter W of shape S applies to the axes 1..len(S) of
// x, broadcast over the batch axis and over the axes after its own: x has
// shape (N, *S, ...). Backward accumulates gW += sum of x gy where x < 0 and
// returns gx = gy, times W where x < 0. The graph backward (double
// backprop) is gx = gy (1 - m + m W) with the mask m = [x < 0] a constant
// and W a parameter variable (the second pass of a gradient penalty reaches
// W through it); gW stays an array, as Linear's.
#include "kernels/activation.h"
#include "ops/op_util.h"
#include "ops/ops.h"
#include "ops/parametric.h"

namespace chainerc::ops {
namespace {

class PReLU final : public Function {
 public:
  explicit PReLU(std::shared_ptr<Parameters> params) { parameters = std::move(params); }
  const char* name() const override { return "PReLU"; }
  FuncPtr clone() const override { return std::make_shared<PReLU>(parameters); }

  Arrays forward(const Arrays& in) override {
    if (in.size() != 1) fail(CH_ERR_INVALID_ARGUMENT, "PReLU: takes 1 input, got ", in.size());
    const Array& x = in[0];
    check_float("PReLU", x);
    const Array& W = parameter_at(*this, 0).param;
    if (x.dtype() != W.dtype())
      fail(CH_ERR_DTYPE, "PReLU: input x is ", dtype_name(x.dtype()), " but W is ",
           dtype_name(W.dtype()));
    if (x.device() != W.device())
      fail(CH_ERR_DEVICE, "PReLU: input x is on ", x.device().to_string(), " but W is on ",
           W.device().to_string());
    bool ok = x.ndim() >= 1 + W.ndim();
    for (int32_t d = 0; ok && d < W.ndim(); ++d) ok = x.shape()[1 + d] == W.shape()[d];
    if (!ok)
      fail(CH_ERR_SHAPE, "PReLU: input x has shape ", x.shape().to_string(), " but W has shape ",
           W.shape().to_string(), "; x must have shape (N, ", W.ndim() ? "" : "...",
           shape_body(W.shape()), ")");
    Array y = Array::empty_like(x);
    kernels::prelu(x, W, y);
    return {y};
  }

  Arrays backward(const Arrays& in, const Arrays& gys) override {
    const Array &x = in[0], &gy = gys[0];
    Parameter& p = parameter_at(*this, 0);
    Array gx = Array::empty_like(x);
    kernels::prelu_grad(x, gy, p.param, gx, p.grad);
    return {gx};
  }

  CH_GRAPH_BACKWARD {
    const Array& x = inputs[0]->data;
    Parameter& p = parameter_at(*this, 0);
    if (parameter_grads_enabled()) {  // gW += sum of x gy where x < 0, as backward
      Array scratch = Array::empty_like(x);
      kernels::prelu_grad(x, gy[0]->data, p.param, scratch, p.grad);
    }
    if (!needs_input_grad(0)) return {nullptr};
    // m = [x < 0] = relu'(-x); W as (1, *S, 1, ...) broadcast over x.
    Array ones = Array::full(x.dtype(), x.shape(), 1.0, x.device());
    Array m = run(kernels::relu_grad, ones, run(kernels::neg, x));
    Array keep = run(kernels::sub, ones, m);  // 1 - m
    Shape ws{1};
    for (int32_t d = 0; d < p.param.ndim(); ++d) ws.push_back(p.param.shape()[d]);
    while (ws.ndim() < x.ndim()) ws.push_back(1);
    VarPtr W = reshape(parameter_variable(*this, 0), ws);
    VarPtr slope = add(constant_variable(keep), mul(constant_variable(m), W));
    return {mul(gy[0], slope)};
  }

 private:
  static std::string shape_body(const Shape& s) {
    std::string out;
    for (int32_t i = 0; i < s.ndim(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
    return out + (s.ndim() ? ", ..." : "");
  }
};

}  // namespace

FuncPtr prelu_new(const Shape& shape, DType dtype, double init) {
  auto params = std::make_shared<Parameters>();
  Array W = initial_parameter("PReLU", "W", nullptr, dtype, shape);
  W.fill(init);
  params->push_back(make_parameter("W", W));
  return std::make_shared<PReLU>(std::move(params));
}

}  // namespace chainerc::ops
