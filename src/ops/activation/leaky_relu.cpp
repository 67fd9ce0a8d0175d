// leaky_relu: y = x where x >= 0, slope * x where x < 0 (Chainer's
// F.leaky_relu, slope 0.2 by default); gx = gy, times slope where x < 0.
#include "ops/nn_util.h"
#include "ops/ops.h"

namespace chainerc::ops {
namespace {

class LeakyReLU final : public Function {
 public:
  explicit LeakyReLU(double slope) : slope_(slope) {}
  const char* name() const override { return "LeakyReLU"; }
  // The slope is converted to the element type once, and the product is
  // computed unconditionally and then selected: a multiply under a condition
  // may trap, so the compiler would keep a branch, while a select vectorizes.
  Arrays forward(const Arrays& in) override {
    const Array& x = in[0];
    check_float("leaky_relu", x);
    Array y = Array::empty_like(x);
    dispatch_floating(x.dtype(), "leaky_relu", [&](auto t) {
      using T = decltype(t);
      const T k = static_cast<T>(slope_);
      par_map(x.data<T>(), y.data<T>(), x.size(), [k](T v) {
        const T scaled = v * k;
        return v < 0 ? scaled : v;
      });
    });
    return {y};
  }
  Arrays backward(const Arrays& in, const Arrays& gy) override {
    const Array& x = in[0];
    Array gx = Array::empty_like(x);
    dispatch_floating(x.dtype(), "leaky_relu", [&](auto t) {
      using T = decltype(t);
      const T k = static_cast<T>(slope_);
      par_map2(x.data<T>(), gy[0].data<T>(), gx.data<T>(), x.size(), [k](T v, T g) {
        const T scaled = g * k;
        return v < 0 ? scaled : g;
      });
    });
    return {gx};
  }

 private:
  double slope_;
};

}  // namespace

VarPtr leaky_relu(const VarPtr& x, double slope) {
  return apply1(std::make_shared<LeakyReLU>(slope), {x});
}

}  // namespace chainerc::ops
