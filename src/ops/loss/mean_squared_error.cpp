// mean_squared_error: sum((x0 - x1)^2) / size (Chainer's
// F.mean_squared_error: the mean over all elements, not scaled by 1/2). The
// output is a 0-d array of the inputs' dtype. Keeps d = x0 - x1 for backward:
// gx0 = 2 d gloss / size, gx1 = -gx0.
#include "backend/cpu/elementwise.h"
#include "ops/nn_util.h"
#include "ops/ops.h"

namespace chainerc::ops {
namespace {

class MeanSquaredError final : public Function {
 public:
  const char* name() const override { return "MeanSquaredError"; }
  Arrays forward(const Arrays& in) override {
    const Array &a = in[0], &b = in[1];
    check_float_pair("mean_squared_error", a, b);
    if (a.shape() != b.shape())
      fail(CH_ERR_SHAPE, "mean_squared_error: x0 has shape ", a.shape().to_string(),
           " but x1 has shape ", b.shape().to_string(), "; the shapes must be equal");
    diff_ = par_binary("mean_squared_error", a, b, [](auto u, auto v) { return u - v; });
    Array loss = Array::empty(a.dtype(), Shape{}, a.device());
    dispatch_floating(a.dtype(), "mean_squared_error", [&](auto t) {
      using T = decltype(t);
      // Sum of squares, vectorised per block and added in double.
      const T* d = diff_.data<T>();
      const int64_t n = diff_.size();
      const double s = cpu::sum_blocks(n, [d](int64_t b, int64_t e) {
        return static_cast<double>(cpu::vector_dot(d + b, d + b, e - b));
      });
      loss.data<T>()[0] = static_cast<T>(s / static_cast<double>(n));
    });
    return {loss};
  }
  Arrays backward(const Arrays&, const Arrays& gy) override {
    Array g0 = Array::empty_like(diff_), g1 = Array::empty_like(diff_);
    dispatch_floating(diff_.dtype(), "mean_squared_error", [&](auto t) {
      using T = decltype(t);
      const T coeff = T(2) * gy[0].data<T>()[0] / static_cast<T>(diff_.size());
      const T* d = diff_.data<T>();
      T *p0 = g0.data<T>(), *p1 = g1.data<T>();
      cpu::parallel_for(diff_.size(), cpu::kElementwiseGrain, [&](int64_t b, int64_t e) {
        const T* __restrict in = d;
        T* __restrict o0 = p0;
        T* __restrict o1 = p1;
        for (int64_t i = b; i < e; ++i) {
          o0[i] = coeff * in[i];
          o1[i] = -coeff * in[i];
        }
      });
    });
    return {g0, g1};
  }

 private:
  Array diff_;
};

}  // namespace

VarPtr mean_squared_error(const VarPtr& x0, const VarPtr& x1) {
  return apply1(std::make_shared<MeanSquaredError>(), {x0, x1});
}

}  // namespace chainerc::ops
