// maximum / minimum (Chainer's F.maximum, F.minimum; NumPy's values, a NaN
// operand giving NaN), broadcast as NumPy does. The gradient goes to a where
// a >= b (maximum) or a <= b (minimum), so that a tie goes to a as Chainer's,
// and to b elsewhere; each summed back to its input's shape. The graph
// backward routes gy through masked() with the same constant mask, so both
// are differentiable to any order. Declared in src/ops/manifest.py with
// their kernels (kernels/pointwise/math_ext.h); masked() is math/masked.h's.
#include "kernels/generated.h"
#include "ops/math/masked.h"
#include "ops/op_util.h"
#include "ops/ops.h"

namespace chainerc::ops {
namespace {

class Masked final : public Function {
 public:
  Masked(Array mask, bool invert) : mask_(std::move(mask)), invert_(invert) {}
  const char* name() const override { return "Masked"; }
  bool retains_input(size_t) const override { return false; }
  Arrays forward(const Arrays& in) override { return {select(in[0])}; }
  Arrays backward(const Arrays&, const Arrays& gy) override { return {select(gy[0])}; }
  CH_GRAPH_BACKWARD { return {masked(gy[0], mask_, invert_)}; }

 private:
  Array select(const Array& x) const {
    return run(invert_ ? kernels::mask_select_not : kernels::mask_select, x, mask_);
  }
  Array mask_;
  bool invert_;
};

// maximum (ge = true) or minimum.
class Extremum final : public Function {
 public:
  explicit Extremum(bool max) : max_(max) {}
  const char* name() const override { return max_ ? "Maximum" : "Minimum"; }
  Arrays forward(const Arrays& in) override {
    return {run_broadcast(who(), max_ ? kernels::maximum : kernels::minimum, in[0], in[1])};
  }
  Arrays backward(const Arrays& in, const Arrays& gy) override {
    const Array mask = mask_of(in[0], in[1]);
    return {sum_to_shape(run(kernels::mask_select, gy[0], mask), in[0].shape()),
            sum_to_shape(run(kernels::mask_select_not, gy[0], mask), in[1].shape())};
  }
  CH_GRAPH_BACKWARD {  // the same routing as a function of gy (the mask a constant)
    const Array mask = mask_of(inputs[0]->data, inputs[1]->data);
    return {sum_to(masked(gy[0], mask, false), inputs[0]->data.shape()),
            sum_to(masked(gy[0], mask, true), inputs[1]->data.shape())};
  }

 private:
  const char* who() const { return max_ ? "maximum" : "minimum"; }
  // 1 where the gradient goes to a, at the broadcast shape.
  Array mask_of(const Array& a, const Array& b) const {
    return run_broadcast(who(), max_ ? kernels::greater_equal_mask : kernels::less_equal_mask, a,
                         b);
  }
  bool max_;
};

}  // namespace

VarPtr masked(const VarPtr& x, const Array& mask, bool invert) {
  return apply1(std::make_shared<Masked>(mask, invert), {x});
}

VarPtr maximum(const VarPtr& a, const VarPtr& b) {
  return apply1(std::make_shared<Extremum>(true), {a, b});
}
VarPtr minimum(const VarPtr& a, const VarPtr& b) {
  return apply1(std::make_shared<Extremum>(false), {a, b});
}

}  // namespace chainerc::ops
