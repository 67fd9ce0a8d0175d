// relu: y = max(0, x) (Chainer's F.relu); gx = gy where x > 0, else 0.
// Keeps y for backward (y > 0 exactly where x > 0), so x can be released.
#include "ops/nn_util.h"
#include "ops/ops.h"

namespace chainerc::ops {
namespace {

class ReLU final : public Function {
 public:
  const char* name() const override { return "ReLU"; }
  bool retains_input(size_t) const override { return false; }
  Arrays forward(const Arrays& in) override {
    y_ = par_unary("relu", in[0], [](auto x) { return x > 0 ? x : decltype(x)(0); });
    return {y_};
  }
  Arrays backward(const Arrays&, const Arrays& gy) override {
    return {
        par_binary("relu", y_, gy[0], [](auto y, auto g) { return y > 0 ? g : decltype(g)(0); })};
  }

 private:
  Array y_;
};

}  // namespace

VarPtr relu(const VarPtr& x) { return apply1(std::make_shared<ReLU>(), {x}); }

}  // namespace chainerc::ops
