// lstm: Long Short-Term Memory units as an activation function, the seed's
// chainer.functions.lstm(c_prev, x) -> (c, h):
//   c = tanh(a) * sigmoid(i) + c_prev * sigmoid(f),  h = tanh(c) * sigmoid(o).
// c_prev has shape (N, U, ...) and x (N, 4U, ...). The seed says x "is split
// along the second dimension into four arrays a, i, f, o"; Chainer 1.0.1's
// code does this with x.reshape(N, U, 4, ...) and takes [:, :, k], so the
// gates are INTERLEAVED along axis 1: a = x[:, 0::4], i = x[:, 1::4],
// f = x[:, 2::4], o = x[:, 3::4]. That is what is implemented here, so
// weights trained with Chainer give the same results.
// Backward recomputes the gates from the inputs (nothing is kept); a missing
// gradient of c or h arrives as zeros. The graph backward (double backprop)
// writes the same formulas with differentiable functions: the gates picked
// out of x by a reshape to (N, U, 4, R), a transpose putting the gate axis
// first and a split, their gradients put back by the reverse.
#include "kernels/activation.h"
#include "ops/graph_ops.h"
#include "ops/op_util.h"
#include "ops/ops.h"

namespace chainerc::ops {
namespace {

constexpr const char* kWho = "lstm";

class LSTM final : public Function {
 public:
  const char* name() const override { return "LSTM"; }

  Arrays forward(const Arrays& in) override {
    const Array& c_prev = in[0];
    const Array& x = in[1];
    check_float_pair(kWho, c_prev, x);
    if (c_prev.ndim() < 2 || x.ndim() != c_prev.ndim())
      fail(CH_ERR_SHAPE, kWho, ": c_prev ", c_prev.shape().to_string(), " and x ",
           x.shape().to_string(), " must have the same number (>= 2) of dimensions");
    bool ok = x.shape()[0] == c_prev.shape()[0] && x.shape()[1] == 4 * c_prev.shape()[1];
    for (int32_t d = 2; d < x.ndim(); ++d) ok = ok && x.shape()[d] == c_prev.shape()[d];
    if (!ok)
      fail(CH_ERR_SHAPE, kWho, ": x ", x.shape().to_string(), " must be c_prev ",
           c_prev.shape().to_string(), " with four times the units (axis 1)");
    Array c = Array::empty_like(c_prev), h = Array::empty_like(c_prev);
    kernels::lstm(c_prev, x, c, h);
    return {c, h};
  }

  Arrays backward(const Arrays& in, const Arrays& gy) override {
    const Array& c_prev = in[0];
    const Array& x = in[1];
    Array gc_prev = Array::empty_like(c_prev), gx = Array::empty_like(x);
    kernels::lstm_grad(c_prev, x, gy[0], gy[1], gc_prev, gx);
    return {gc_prev, gx};
  }

  // c = a i + c_prev f, h = tanh(c) o with a = tanh(x_a), i, f, o = sigmoid(x_i, x_f, x_o):
  //   gc' = gc + gh o (1 - tanh(c)^2),  gc_prev = gc' f,
  //   g x_a = gc' i (1 - a^2),  g x_i = gc' a i (1 - i),
  //   g x_f = gc' c_prev f (1 - f),  g x_o = gh tanh(c) o (1 - o).
  CH_GRAPH_BACKWARD {
    const VarPtr &c_prev = inputs[0], &x = inputs[1];
    const Shape& cs = c_prev->data.shape();
    const Shape& xs = x->data.shape();
    const int64_t N = cs[0], U = cs[1];
    const int64_t R = N * U > 0 ? c_prev->data.size() / (N * U) : [&] {
      int64_t r = 1;
      for (int32_t d = 2; d < cs.ndim(); ++d) r *= cs[d];
      return r;
    }();
    const Shape piece{1, N, U, R};
    const int32_t gate_first[] = {2, 0, 1, 3};
    std::vector<VarPtr> gates = split_axis(transpose(reshape(x, Shape{N, U, 4, R}), gate_first, 4),
                                           0, std::vector<Shape>(4, piece));
    for (VarPtr& g : gates) g = reshape(g, cs);
    const VarPtr a = tanh(gates[0]), i = sigmoid(gates[1]), f = sigmoid(gates[2]),
                 o = sigmoid(gates[3]);
    const VarPtr c = add(mul(a, i), mul(c_prev, f));
    const VarPtr tc = tanh(c);
    auto one_minus = [](const VarPtr& v) { return rsub_scalar(v, 1.0); };
    const VarPtr& gc = gy[0];
    const VarPtr& gh = gy[1];
    const VarPtr gct = add(gc, mul(mul(gh, o), one_minus(mul(tc, tc))));
    const VarPtr ga = mul(mul(gct, i), one_minus(mul(a, a)));
    const VarPtr gi = mul(mul(gct, a), mul(i, one_minus(i)));
    const VarPtr gf = mul(mul(gct, c_prev), mul(f, one_minus(f)));
    const VarPtr go = mul(mul(gh, tc), mul(o, one_minus(o)));
    std::vector<VarPtr> pieces;
    for (const VarPtr& g : {ga, gi, gf, go}) pieces.push_back(reshape(g, piece));
    const int32_t gate_third[] = {1, 2, 0, 3};
    VarPtr gx = reshape(transpose(concat(pieces, 0), gate_third, 4), xs);
    return {needs_input_grad(0) ? mul(gct, f) : nullptr, gx};
  }
};

}  // namespace

std::vector<VarPtr> lstm(const VarPtr& c_prev, const VarPtr& x) {
  return apply_function(std::make_shared<LSTM>(), {c_prev, x});
}

}  // namespace chainerc::ops
