// relu: y = max(0, x) (Chainer's F.relu); gx = gy where x > 0, else 0.
// Keeps y for backward (y > 0 exactly where x > 0), so x can be released.
#include "kernels/activation.h"
#include "ops/op_util.h"
#include "ops/ops.h"

namespace chainerc::ops {
namespace {

class ReLU final : public Function {
 public:
  const char* name() const override { return "ReLU"; }
  bool retains_input(size_t) const override { return false; }
  Arrays forward(const Arrays& in) override {
    check_float("relu", in[0]);
    y_ = run(kernels::relu, in[0]);
    return {y_};
  }
  Arrays backward(const Arrays&, const Arrays& gy) override {
    return {run_over_grad(kernels::relu_grad, gy[0], y_)};
  }

 private:
  Array y_;
};

}  // namespace

VarPtr relu(const VarPtr& x) { return apply1(std::make_shared<ReLU>(), {x}); }

}  // namespace chainerc::ops
