// CPU kernels of softmax over axis 1: an (N, C) array's rows through
// softmax_rows.h, (N, C, ...) arrays as one vectorised exp per (C, inner)
// slice, the backward through the vector math library's dot.
#include <algorithm>

#include "backend/cpu/kernel_list.h"
#include "backend/cpu/parallel.h"
#include "backend/cpu/softmax_rows.h"
#include "backend/cpu/vector_math.h"
#include "kernels/activation.h"

namespace chainerc::cpu {
namespace {

// (N, C, trailing axes' product): softmax runs over the C channels.
using Layout = AxisSplit;

template <typename T>
void softmax_forward(const T* x, T* y, const Layout& l) {
  const int64_t c = l.extent, inner = l.inner;
  if (c == 0 || inner == 0 || l.outer == 0) return;  // an empty array: no maximum to take
  if (inner == 1) {                                  // (N, C): contiguous rows
    softmax_rows(x, y, l.outer, c, [](int64_t, int64_t, const T*, T*) {});
    return;
  }
  const int64_t grain = std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(1, c * inner));
  parallel_for(l.outer, grain, [&](int64_t b, int64_t e) {
    for (int64_t n = b; n < e; ++n) {
      const T* xr = x + n * c * inner;
      T* yr = y + n * c * inner;
      // y = x - max over the channels, then one vectorised exp over the
      // whole (c, inner) slice, then divide by the channel sums.
      for (int64_t i = 0; i < inner; ++i) {
        T m = xr[i];
        for (int64_t j = 1; j < c; ++j) m = std::max(m, xr[j * inner + i]);
        for (int64_t j = 0; j < c; ++j) yr[j * inner + i] = xr[j * inner + i] - m;
      }
      vector_exp(yr, yr, c * inner);
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
  const int64_t c = l.extent, inner = l.inner;
  if (c == 0 || inner == 0 || l.outer == 0) return;  // an empty array: nothing to do
  const int64_t grain = std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(1, c * inner));
  parallel_for(l.outer, grain, [&](int64_t b, int64_t e) {
    for (int64_t n = b; n < e; ++n) {
      const int64_t o = n * c * inner;
      if (inner == 1) {  // (N, C): contiguous rows
        const T s = vector_dot(gy + o, y + o, c);
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

void softmax_kernel(const Array& x, Array& y) {
  dispatch_floating(x.dtype(), "softmax", [&](auto t) {
    using T = decltype(t);
    softmax_forward(x.data<T>(), y.data<T>(), split_at_axis(x.shape(), 1));
  });
}

void softmax_grad_kernel(const Array& y, const Array& gy, Array& gx) {
  dispatch_floating(y.dtype(), "softmax", [&](auto t) {
    using T = decltype(t);
    softmax_backward(y.data<T>(), gy.data<T>(), gx.data<T>(), split_at_axis(y.shape(), 1));
  });
}

}  // namespace

void register_softmax_kernels() {
  kernels::softmax.set(CH_DEVICE_CPU, softmax_kernel);
  kernels::softmax_grad.set(CH_DEVICE_CPU, softmax_grad_kernel);
}

}  // namespace chainerc::cpu
