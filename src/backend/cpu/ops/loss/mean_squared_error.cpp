// CPU kernels of mean_squared_error: the difference over the pool, its sum of
// squares vectorised per fixed block and added in double.
#include "backend/cpu/elementwise.h"
#include "backend/cpu/kernel_list.h"
#include "backend/cpu/pointwise.h"
#include "backend/cpu/vector_math.h"
#include "kernels/loss.h"

namespace chainerc::cpu {
namespace {

void mse_kernel(const Array& x0, const Array& x1, Array& diff, Array& loss) {
  dispatch_floating(x0.dtype(), "mean_squared_error", [&](auto t) {
    using T = decltype(t);
    par_map2(x0.data<T>(), x1.data<T>(), diff.data<T>(), x0.size(), [](T u, T v) { return u - v; });
    const T* d = diff.data<T>();
    const int64_t n = diff.size();
    const double s = sum_blocks(n, [d](int64_t b, int64_t e) {
      return static_cast<double>(vector_dot(d + b, d + b, e - b));
    });
    loss.data<T>()[0] = static_cast<T>(s / static_cast<double>(n));
  });
}

void mse_grad_kernel(const Array& diff, const Array& gloss, Array& g0, Array& g1) {
  dispatch_floating(diff.dtype(), "mean_squared_error", [&](auto t) {
    using T = decltype(t);
    const T coeff = T(2) * gloss.data<T>()[0] / static_cast<T>(diff.size());
    const T* d = diff.data<T>();
    T *p0 = g0.data<T>(), *p1 = g1.data<T>();
    parallel_for(diff.size(), kElementwiseGrain, [&](int64_t b, int64_t e) {
      const T* __restrict in = d;
      T* __restrict o0 = p0;
      T* __restrict o1 = p1;
      for (int64_t i = b; i < e; ++i) {
        o0[i] = coeff * in[i];
        o1[i] = -coeff * in[i];
      }
    });
  });
}

}  // namespace

void register_mean_squared_error_kernels() {
  kernels::mean_squared_error.set(CH_DEVICE_CPU, mse_kernel);
  kernels::mean_squared_error_grad.set(CH_DEVICE_CPU, mse_grad_kernel);
}

}  // namespace chainerc::cpu
