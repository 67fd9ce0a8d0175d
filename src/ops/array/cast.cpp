// cast (Chainer 7's F.cast): x converted to another dtype (float32, float64,
// int32); the gradient is gy cast back to x's dtype (so twice
// differentiable). Casting to x's own dtype is identity.
#include "kernels/connection.h"
#include "ops/op_util.h"
#include "ops/ops.h"

namespace chainerc::ops {
namespace {

Array converted(const Array& x, DType t) {
  Array y = Array::empty(t, x.shape(), x.device());
  kernels::convert_dtype(x, y);
  return y;
}

class Cast final : public Function {
 public:
  explicit Cast(DType t) : to_(t) {}
  const char* name() const override { return "Cast"; }
  bool retains_input(size_t) const override { return false; }  // backward reads x's dtype
  Arrays forward(const Arrays& in) override { return {converted(in[0], to_)}; }
  Arrays backward(const Arrays& in, const Arrays& gy) override {
    return {converted(gy[0], in[0].dtype())};
  }
  CH_GRAPH_BACKWARD { return {cast(gy[0], inputs[0]->data.dtype())}; }

 private:
  DType to_;
};

}  // namespace

VarPtr cast(const VarPtr& x, DType type) {
  if (x->data.dtype() == type) return identity(x);
  return apply1(std::make_shared<Cast>(type), {x});
}

}  // namespace chainerc::ops
