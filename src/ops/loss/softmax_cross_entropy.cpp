// softmax_cross_entropy: the mean over the batch of -log softmax(x)[i, t[i]]
// (Chainer's F.softmax_cross_entropy) for scores x (N, C) and int32 labels t
// (N,), computed as log-sum-exp with the row maximum subtracted. The output is
// a 0-d array of x's dtype. Keeps softmax(x) for backward:
// gx = (softmax(x) - onehot(t)) * gloss / N; t gets no gradient.
#include "kernels/loss.h"
#include "ops/label_check.h"
#include "ops/op_util.h"
#include "ops/ops.h"

namespace chainerc::ops {
namespace {

// x (N, C) float and t (N,) int32 on x's device with labels in [0, C); Error
// otherwise.
void check_scores_labels(const char* who, const Array& x, const Array& t) {
  check_float(who, x);
  if (t.device() != x.device())
    fail(CH_ERR_DEVICE, who, ": x is on ", x.device().to_string(), " but t is on ",
         t.device().to_string());
  if (x.ndim() != 2)
    fail(CH_ERR_SHAPE, who, ": x has shape ", x.shape().to_string(), "; (N, C) is expected");
  if (t.dtype() != DType::Int32)
    fail(CH_ERR_DTYPE, who, ": t is a ", t.describe(), "; int32 labels are expected");
  if (t.ndim() != 1 || t.shape()[0] != x.shape()[0])
    fail(CH_ERR_SHAPE, who, ": t has shape ", t.shape().to_string(), " but x has shape ",
         x.shape().to_string(), "; t must have shape (", x.shape()[0], ",)");
  const int64_t c = x.shape()[1];
  check_labels(who, t, c);
}

class SoftmaxCrossEntropy final : public Function {
 public:
  const char* name() const override { return "SoftmaxCrossEntropy"; }
  // Backward reads the kept probabilities and the labels t (input 1), not x.
  bool retains_input(size_t i) const override { return i != 0; }
  Arrays forward(const Arrays& in) override {
    const Array &x = in[0], &t = in[1];
    check_scores_labels("softmax_cross_entropy", x, t);
    y_ = Array::empty_like(x);
    Array loss = Array::empty(x.dtype(), Shape{}, x.device());
    kernels::softmax_cross_entropy(x, t, y_, loss);
    return {loss};
  }
  Arrays backward(const Arrays& in, const Arrays& gy) override {
    Array gx = Array::empty_like(y_);
    kernels::softmax_cross_entropy_grad(y_, in[1], gy[0], gx);
    return {gx, Array()};
  }
  // gx = (softmax(x) - onehot(t)) gy / N, with softmax(x) the kept
  // probabilities as a softmax node on x (x's data may have been released).
  CH_GRAPH_BACKWARD {
    const Array& t = inputs[1]->data;
    const double n = static_cast<double>(y_.shape()[0]);
    Array minus_onehot = Array::empty_like(y_);  // -onehot(t) / N
    kernels::softmax_cross_entropy_grad(
        Array::zeros_like(y_), t, Array::full(y_.dtype(), Shape{}, 1.0, y_.device()), minus_onehot);
    VarPtr p = mul_scalar(softmax_of_kept(inputs[0], y_), 1.0 / n);
    VarPtr g = add(p, constant_variable(minus_onehot));
    return {mul(g, broadcast_to(gy[0], y_.shape())), nullptr};
  }

 private:
  Array y_;
};

}  // namespace

VarPtr softmax_cross_entropy(const VarPtr& x, const VarPtr& t) {
  return apply1(std::make_shared<SoftmaxCrossEntropy>(), {x, t});
}

}  // namespace chainerc::ops
