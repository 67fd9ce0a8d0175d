// dropout: in training, y = x * mask where mask is 1 / (1 - ratio) with
// probability 1 - ratio and 0 otherwise (Chainer's F.dropout, ratio 0.5);
// backward gx = gy * mask. In test mode it returns x itself, as Chainer does.
// The mask is drawn from the engine's generator (random::fill_uniform).
#include <cmath>

#include "core/random.h"
#include "ops/nn_util.h"
#include "ops/ops.h"

namespace chainerc::ops {
namespace {

class Dropout final : public Function {
 public:
  explicit Dropout(double ratio) : ratio_(ratio) {}
  const char* name() const override { return "Dropout"; }
  Arrays forward(const Arrays& in) override {
    const Array& x = in[0];
    check_float("dropout", x);
    mask_ = Array::empty_like(x);
    random::fill_uniform(mask_, 0.0, 1.0);
    dispatch_floating(x.dtype(), "dropout", [&](auto t) {
      using T = decltype(t);
      const double ratio = ratio_;
      const T scale = static_cast<T>(1.0 / (1.0 - ratio));
      T* m = mask_.data<T>();
      // u ~ U[0, 1): kept when u >= ratio (probability 1 - ratio).
      const T threshold = static_cast<T>(ratio);
      par_map(m, m, mask_.size(), [=](T u) { return u >= threshold ? scale : T(0); });
    });
    return {par_binary("dropout", x, mask_, [](auto v, auto m) { return v * m; })};
  }
  Arrays backward(const Arrays&, const Arrays& gy) override {
    return {par_binary("dropout", gy[0], mask_, [](auto g, auto m) { return g * m; })};
  }

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
