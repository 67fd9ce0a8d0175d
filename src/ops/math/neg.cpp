// neg: y = -x.
#include "ops/op_util.h"
#include "ops/ops.h"

namespace chainerc::ops {
namespace {

class Neg final : public Function {
 public:
  const char* name() const override { return "Neg"; }
  Arrays forward(const Arrays& in) override {
    return {unary("neg", in[0], [](auto x) { return -x; })};
  }
  Arrays backward(const Arrays&, const Arrays& gy) override {
    return {unary("neg", gy[0], [](auto g) { return -g; })};
  }
};

}  // namespace

VarPtr neg(const VarPtr& x) { return apply1(std::make_shared<Neg>(), {x}); }

}  // namespace chainerc::ops
