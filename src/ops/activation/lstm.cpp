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
// gradient of c or h arrives as zeros.
#include "kernels/activation.h"
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
};

}  // namespace

std::vector<VarPtr> lstm(const VarPtr& c_prev, const VarPtr& x) {
  return apply_function(std::make_shared<LSTM>(), {c_prev, x});
}

}  // namespace chainerc::ops
