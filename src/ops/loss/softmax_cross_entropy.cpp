// softmax_cross_entropy: the mean over the batch of -log softmax(x)[i, t[i]]
// (Chainer's F.softmax_cross_entropy) for scores x (N, C) and int32 labels t
// (N,), computed as log-sum-exp with the row maximum subtracted. The output is
// a 0-d array of x's dtype. Keeps softmax(x) for backward:
// gx = (softmax(x) - onehot(t)) * gloss / N; t gets no gradient.
#include <algorithm>
#include <cmath>
#include <vector>

#include "ops/nn_util.h"
#include "ops/ops.h"

namespace chainerc::ops {
namespace {

// x (N, C) float and t (N,) int32 with labels in [0, C); Error otherwise.
void check_scores_labels(const char* who, const Array& x, const Array& t) {
  check_float(who, x);
  cpu::require_cpu(t, who);
  if (x.ndim() != 2)
    fail(CH_ERR_SHAPE, who, ": x has shape ", x.shape().to_string(), "; (N, C) is expected");
  if (t.dtype() != DType::Int32)
    fail(CH_ERR_DTYPE, who, ": t is a ", t.describe(), "; int32 labels are expected");
  if (t.ndim() != 1 || t.shape()[0] != x.shape()[0])
    fail(CH_ERR_SHAPE, who, ": t has shape ", t.shape().to_string(), " but x has shape ",
         x.shape().to_string(), "; t must have shape (", x.shape()[0], ",)");
  const int32_t* pt = t.data<int32_t>();
  const int64_t c = x.shape()[1];
  for (int64_t i = 0, n = t.size(); i < n; ++i)
    if (pt[i] < 0 || pt[i] >= c)
      fail(CH_ERR_INVALID_ARGUMENT, who, ": label t[", i, "] = ", pt[i], " is out of range [0, ", c,
           ")");
}

class SoftmaxCrossEntropy final : public Function {
 public:
  const char* name() const override { return "SoftmaxCrossEntropy"; }
  // Backward reads the kept probabilities and the labels t (input 1), not x.
  bool retains_input(size_t i) const override { return i != 0; }
  Arrays forward(const Arrays& in) override {
    const Array &x = in[0], &t = in[1];
    check_scores_labels("softmax_cross_entropy", x, t);
    const int64_t n = x.shape()[0], c = x.shape()[1];
    y_ = Array::empty_like(x);
    Array loss = Array::empty(x.dtype(), Shape{}, x.device());
    dispatch_floating(x.dtype(), "softmax_cross_entropy", [&](auto tag) {
      using T = decltype(tag);
      const T* px = x.data<T>();
      T* py = y_.data<T>();
      const int32_t* pt = t.data<int32_t>();
      std::vector<double> row_loss(static_cast<size_t>(n));
      const int64_t grain = std::max<int64_t>(1, cpu::kElementwiseGrain / std::max<int64_t>(1, c));
      cpu::parallel_for(n, grain, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) {
          const T* xr = px + i * c;
          T* yr = py + i * c;
          const T m = cpu::vector_max(xr, c);
          for (int64_t j = 0; j < c; ++j) yr[j] = xr[j] - m;
          cpu::vector_exp(yr, yr, c);
          const T s = cpu::vector_sum(yr, c);
          const T r = T(1) / s;
          for (int64_t j = 0; j < c; ++j) yr[j] *= r;
          row_loss[static_cast<size_t>(i)] = static_cast<double>(std::log(s) + m - xr[pt[i]]);
        }
      });
      double total = 0;
      for (double v : row_loss) total += v;
      loss.data<T>()[0] = static_cast<T>(total / static_cast<double>(n));
    });
    return {loss};
  }
  Arrays backward(const Arrays& in, const Arrays& gy) override {
    const Array& t = in[1];
    const int64_t n = y_.shape()[0], c = y_.shape()[1];
    Array gx = Array::empty_like(y_);
    dispatch_floating(y_.dtype(), "softmax_cross_entropy", [&](auto tag) {
      using T = decltype(tag);
      const T coeff = gy[0].data<T>()[0] / static_cast<T>(n);
      const T* py = y_.data<T>();
      T* pg = gx.data<T>();
      const int32_t* pt = t.data<int32_t>();
      par_map(py, pg, n * c, [coeff](T v) { return v * coeff; });
      for (int64_t i = 0; i < n; ++i) pg[i * c + pt[i]] -= coeff;
    });
    return {gx, Array()};
  }

 private:
  Array y_;
};

}  // namespace

VarPtr softmax_cross_entropy(const VarPtr& x, const VarPtr& t) {
  return apply1(std::make_shared<SoftmaxCrossEntropy>(), {x, t});
}

}  // namespace chainerc::ops
