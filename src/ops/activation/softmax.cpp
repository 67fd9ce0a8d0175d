// softmax: y = exp(x) / sum(exp(x)) along axis 1 (Chainer's F.softmax; for
// an (N, C, ...) input every position of the trailing axes is normalised
// over C). Computed as exp(x - max) for stability. Keeps y for backward:
// gx = y (gy - sum(gy y, axis 1)).
#include <algorithm>
#include <cmath>

#include "ops/nn_util.h"
#include "ops/ops.h"

namespace chainerc::ops {
namespace {

// (outer, channels, inner) of an array normalised over axis 1.
struct Layout {
  int64_t outer, channels, inner;
};

Layout layout_of(const Array& x) {
  if (x.ndim() < 2)
    fail(CH_ERR_SHAPE, "softmax: input has shape ", x.shape().to_string(),
         "; an array of at least 2 dimensions (N, C, ...) is expected");
  Layout l{x.shape()[0], x.shape()[1], 1};
  for (int32_t d = 2; d < x.ndim(); ++d) l.inner *= x.shape()[d];
  return l;
}

template <typename T>
void softmax_forward(const T* x, T* y, const Layout& l) {
  const int64_t c = l.channels, inner = l.inner;
  if (c == 0) return;  // an empty array: no maximum to take
  const int64_t grain =
      std::max<int64_t>(1, cpu::kElementwiseGrain / std::max<int64_t>(1, c * inner));
  cpu::parallel_for(l.outer, grain, [&](int64_t b, int64_t e) {
    for (int64_t n = b; n < e; ++n) {
      const T* xr = x + n * c * inner;
      T* yr = y + n * c * inner;
      if (inner == 1) {  // (N, C): contiguous rows
        const T m = cpu::vector_max(xr, c);
        for (int64_t j = 0; j < c; ++j) yr[j] = xr[j] - m;
        cpu::vector_exp(yr, yr, c);
        const T r = T(1) / cpu::vector_sum(yr, c);
        for (int64_t j = 0; j < c; ++j) yr[j] *= r;
        continue;
      }
      // y = x - max over the channels, then one vectorised exp over the
      // whole (c, inner) slice, then divide by the channel sums.
      for (int64_t i = 0; i < inner; ++i) {
        T m = xr[i];
        for (int64_t j = 1; j < c; ++j) m = std::max(m, xr[j * inner + i]);
        for (int64_t j = 0; j < c; ++j) yr[j * inner + i] = xr[j * inner + i] - m;
      }
      cpu::vector_exp(yr, yr, c * inner);
      for (int64_t i = 0; i < inner; ++i) {
        T s = 0;
        for (int64_t j = 0; j < c; ++j) s += yr[j * inner + i];
        const T r = T(1) / s;
        for (int64_t j = 0; j < c; ++j) yr[j * inner + i] *= r;
      }
    }
  });
}

template <typename T>
void softmax_backward(const T* y, const T* gy, T* gx, const Layout& l) {
  const int64_t c = l.channels, inner = l.inner;
  if (c == 0) return;  // an empty array: no maximum to take
  const int64_t grain =
      std::max<int64_t>(1, cpu::kElementwiseGrain / std::max<int64_t>(1, c * inner));
  cpu::parallel_for(l.outer, grain, [&](int64_t b, int64_t e) {
    for (int64_t n = b; n < e; ++n) {
      const int64_t o = n * c * inner;
      if (inner == 1) {  // (N, C): contiguous rows
        const T s = cpu::vector_dot(gy + o, y + o, c);
        for (int64_t j = 0; j < c; ++j) gx[o + j] = y[o + j] * (gy[o + j] - s);
        continue;
      }
      for (int64_t i = 0; i < inner; ++i) {
        T s = 0;
        for (int64_t j = 0; j < c; ++j) s += gy[o + j * inner + i] * y[o + j * inner + i];
        for (int64_t j = 0; j < c; ++j) {
          const int64_t k = o + j * inner + i;
          gx[k] = y[k] * (gy[k] - s);
        }
      }
    }
  });
}

class Softmax final : public Function {
 public:
  const char* name() const override { return "Softmax"; }
  Arrays forward(const Arrays& in) override {
    const Array& x = in[0];
    check_float("softmax", x);
    const Layout l = layout_of(x);
    y_ = Array::empty_like(x);
    dispatch_floating(x.dtype(), "softmax", [&](auto t) {
      using T = decltype(t);
      softmax_forward(x.data<T>(), y_.data<T>(), l);
    });
    return {y_};
  }
  Arrays backward(const Arrays&, const Arrays& gy) override {
    Array gx = Array::empty_like(y_);
    const Layout l = layout_of(y_);
    dispatch_floating(y_.dtype(), "softmax", [&](auto t) {
      using T = decltype(t);
      softmax_backward(y_.data<T>(), gy[0].data<T>(), gx.data<T>(), l);
    });
    return {gx};
  }

 private:
  Array y_;
};

}  // namespace

VarPtr softmax(const VarPtr& x) { return apply1(std::make_shared<Softmax>(), {x}); }

}  // namespace chainerc::ops
