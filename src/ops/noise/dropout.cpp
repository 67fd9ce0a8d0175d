// dropout: in training, y = x * mask where mask is 1 / (1 - ratio) with
// probability 1 - ratio and 0 otherwise (Chainer's F.dropout, ratio 0.5);
// backward gx = gy * mask. In test mode it returns x itself, as Chainer does.
// The mask comes from a counter-based hash (splitmix64) of the element index
// and one value drawn from the engine's generator, so ch_config_seed makes it
// reproducible and the work splits over threads (kernels/pointwise/noise.h).
#include "core/random.h"
#include "kernels/math.h"
#include "kernels/noise.h"
#include "ops/op_util.h"
#include "ops/ops.h"

namespace chainerc::ops {
namespace {

class Dropout final : public Function {
 public:
  explicit Dropout(double ratio) : ratio_(ratio) {}
  const char* name() const override { return "Dropout"; }
  bool retains_input(size_t) const override { return false; }  // backward reads the mask
  Arrays forward(const Arrays& in) override {
    const Array& x = in[0];
    check_float("dropout", x);
    mask_ = Array::empty_like(x);
    Array y = Array::empty_like(x);
    // One draw from the engine's generator (ch_config_seed) seeds the mask.
    kernels::dropout(x, random::next_u64(), ratio_, mask_, y);
    return {y};
  }
  Arrays backward(const Arrays&, const Arrays& gy) override {
    Array gx = Array::empty_like(mask_);
    kernels::mul(gy[0], mask_, gx);
    return {gx};
  }
  CH_GRAPH_BACKWARD { return {mul(gy[0], constant_variable(mask_))}; }

 private:
  double ratio_;
  Array mask_;
};

}  // namespace

VarPtr dropout(const VarPtr& x, double ratio, bool train) {
  if (!(ratio >= 0.0 && ratio < 1.0))
    fail(CH_ERR_INVALID_ARGUMENT, "dropout: ratio ", ratio, " is out of range [0, 1)");
  if (!train) return x;
  return apply1(std::make_shared<Dropout>(ratio), {x});
}

}  // namespace chainerc::ops
