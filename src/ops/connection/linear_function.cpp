// linear (Chainer 7's F.linear(x, W, b=None, n_batch_axes=1)): y = x W^T + b
// with W (out_size, in_size) and b (out_size,) as variables (the Linear
// link, linear.cpp, holds them as parameters). The first n_batch_axes axes
// of x are batch axes (M rows in all), the rest are flattened to in_size
// features; y is (batch axes..., out_size). Forward is one GEMM onto y's
// rows preset to b; backward: gx = gy W, gW = gy^T x (GEMMs), gb = the sum
// of gy's rows. The graph backward writes the same with matmul and
// sum_axis: twice differentiable in x, W and b.
#include "ops/op_util.h"
#include "ops/ops.h"

namespace chainerc::ops {
namespace {

struct LinearView {
  int64_t M, in, out;
  Shape y_shape;
};

class LinearFunction final : public Function {
 public:
  explicit LinearFunction(LinearView v) : v_(std::move(v)) {}
  const char* name() const override { return "LinearFunction"; }

  Arrays forward(const Arrays& in) override {
    const Array &x = in[0], &W = in[1];
    Array y = Array::empty(x.dtype(), v_.y_shape, x.device());
    kernels::Gemm g = kernels::Gemm::packed(false, true, v_.M, v_.out, v_.in);  // y = x W^T
    if (in.size() > 2) {  // y's rows start as b; the product is added onto them
      kernels::broadcast_to(in[2], y);
      g.beta = 1;
    }
    kernels::gemm(g, x, W, y);
    return {y};
  }

  Arrays backward(const Arrays& in, const Arrays& gys) override {
    const Array &x = in[0], &W = in[1], &gy = gys[0];
    Arrays out(in.size());
    if (needs_input_grad(0)) {  // gx = gy W
      out[0] = Array::empty_like(x);
      kernels::gemm(kernels::Gemm::packed(false, false, v_.M, v_.in, v_.out), gy, W, out[0]);
    }
    if (needs_input_grad(1)) {  // gW = gy^T x
      out[1] = Array::empty_like(W);
      kernels::gemm(kernels::Gemm::packed(true, false, v_.out, v_.in, v_.M), gy, x, out[1]);
    }
    if (in.size() > 2 && needs_input_grad(2))  // gb = sum of gy's rows
      out[2] = sum_to_shape(gy.reshaped(Shape{v_.M, v_.out}), Shape{v_.out});
    return out;
  }

  CH_GRAPH_BACKWARD {
    const VarPtr g = reshape(gy[0], Shape{v_.M, v_.out});
    std::vector<VarPtr> out(inputs.size());
    if (needs_input_grad(0))
      out[0] = reshape(matmul(g, inputs[1], false, false), inputs[0]->data.shape());
    if (needs_input_grad(1))
      out[1] = matmul(g, reshape(inputs[0], Shape{v_.M, v_.in}), true, false);
    if (inputs.size() > 2 && needs_input_grad(2)) out[2] = sum_axis(g, 0, false);
    return out;
  }

 private:
  LinearView v_;
};

// The checks of linear and linear_nobias (b null: none).
LinearView linear_view(const Array& x, const Array& W, const Array* b, int32_t n_batch_axes) {
  const char* who = "linear";
  check_float_pair(who, x, W);
  if (b) check_float_pair(who, x, *b);
  if (W.ndim() != 2)
    fail(CH_ERR_SHAPE, who, ": W has shape ", W.shape().to_string(),
         "; (out_size, in_size) is expected");
  const int64_t out = W.shape()[0], in = W.shape()[1];
  if (b && b->shape() != Shape{out})
    fail(CH_ERR_SHAPE, who, ": b has shape ", b->shape().to_string(), " but W of shape ",
         W.shape().to_string(), " needs (", out, ",)");
  if (n_batch_axes < 1 || n_batch_axes >= x.ndim())
    fail(CH_ERR_INVALID_ARGUMENT, who, ": n_batch_axes ", n_batch_axes,
         " must be at least 1 and "
         "below x's ndim (x has shape ",
         x.shape().to_string(), ")");
  LinearView v{1, 1, out, Shape{}};
  for (int32_t i = 0; i < x.ndim(); ++i) {
    if (i < n_batch_axes) {
      v.M *= x.shape()[i];
      v.y_shape.push_back(x.shape()[i]);
    } else {
      v.in *= x.shape()[i];
    }
  }
  v.y_shape.push_back(out);
  if (v.in != in)
    fail(CH_ERR_SHAPE, who, ": x of shape ", x.shape().to_string(), " has ", v.in,
         " features after its ", n_batch_axes, " batch axes but W of shape ", W.shape().to_string(),
         " takes ", in);
  return v;
}

}  // namespace

VarPtr linear(const VarPtr& x, const VarPtr& W, const VarPtr& b, int32_t n_batch_axes) {
  return apply1(
      std::make_shared<LinearFunction>(linear_view(x->data, W->data, &b->data, n_batch_axes)),
      {x, W, b});
}

VarPtr linear_nobias(const VarPtr& x, const VarPtr& W, int32_t n_batch_axes) {
  return apply1(
      std::make_shared<LinearFunction>(linear_view(x->data, W->data, nullptr, n_batch_axes)),
      {x, W});
}

}  // namespace chainerc::ops
