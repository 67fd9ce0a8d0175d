// softmax: y = exp(x) / sum(exp(x)) along axis 1 (Chainer's F.softmax; for
// an (N, C, ...) input every position of the trailing axes is normalised
// over C). Computed as exp(x - max) for stability. Keeps y for backward:
// gx = y (gy - sum(gy y, axis 1)); x is not kept.
#include "kernels/activation.h"
#include "ops/op_util.h"
#include "ops/ops.h"

namespace chainerc::ops {
namespace {

class Softmax final : public Function {
 public:
  Softmax() = default;
  explicit Softmax(Array kept) : y_(std::move(kept)) {}
  // A node made by softmax_of_kept returns the kept y and never reads x.
  bool reads_input_data() const override { return !y_.defined(); }
  const char* name() const override { return "Softmax"; }
  bool retains_input(size_t) const override { return false; }  // backward reads y
  Arrays forward(const Arrays& in) override {
    const Array& x = in[0];
    check_float("softmax", x);
    if (x.ndim() < 2)
      fail(CH_ERR_SHAPE, "softmax: input has shape ", x.shape().to_string(),
           "; an array of at least 2 dimensions (N, C, ...) is expected");
    if (y_.defined()) return {y_};
    y_ = run(kernels::softmax, x);
    return {y_};
  }
  Arrays backward(const Arrays&, const Arrays& gy) override {
    Array gx = Array::empty_like(y_);
    kernels::softmax_grad(y_, gy[0], gx);
    return {gx};
  }
  CH_GRAPH_BACKWARD {  // gx = y gy - y sum(y gy, axis 1)
    VarPtr y = output_variable(self, 0, y_);
    VarPtr ygy = mul(y, gy[0]);
    VarPtr s = broadcast_to(sum_axis(ygy, 1, true), y_.shape());
    return {sub(ygy, mul(y, s))};
  }

 private:
  Array y_;
};

}  // namespace

VarPtr softmax(const VarPtr& x) { return apply1(std::make_shared<Softmax>(), {x}); }
VarPtr softmax_of_kept(const VarPtr& x, const Array& y) {
  return apply1(std::make_shared<Softmax>(y), {x});
}

}  // namespace chainerc::ops
