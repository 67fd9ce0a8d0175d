// relu: y = max(0, x) (Chainer's F.relu); gx = gy where x > 0, else 0.
#include "ops/nn_util.h"
#include "ops/ops.h"

namespace chainerc::ops {
namespace {

class ReLU final : public Function {
 public:
  const char* name() const override { return "ReLU"; }
  Arrays forward(const Arrays& in) override {
    return {par_unary("relu", in[0], [](auto x) { return x > 0 ? x : decltype(x)(0); })};
  }
  Arrays backward(const Arrays& in, const Arrays& gy) override {
    return {par_binary("relu", in[0], gy[0],
                       [](auto x, auto g) { return x > 0 ? g : decltype(g)(0); })};
  }
};

}  // namespace

VarPtr relu(const VarPtr& x) { return apply1(std::make_shared<ReLU>(), {x}); }

}  // namespace chainerc::ops
