// CPU kernels of softmax_cross_entropy: rows through the vector math library
// (max, exp, sum), the row losses added in order.
#include <algorithm>
#include <cmath>
#include <vector>

#include "backend/cpu/kernel_list.h"
#include "backend/cpu/pointwise.h"
#include "backend/cpu/vector_math.h"
#include "kernels/loss.h"

namespace chainerc::cpu {
namespace {

void sce_kernel(const Array& x, const Array& t, Array& prob, Array& loss) {
  const int64_t n = x.shape()[0], c = x.shape()[1];
  dispatch_floating(x.dtype(), "softmax_cross_entropy", [&](auto tag) {
    using T = decltype(tag);
    const T* px = x.data<T>();
    T* py = prob.data<T>();
    const int32_t* pt = t.data<int32_t>();
    std::vector<double> row_loss(static_cast<size_t>(n));
    const int64_t grain = std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(1, c));
    parallel_for(n, grain, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        const T* xr = px + i * c;
        T* yr = py + i * c;
        const T m = vector_max(xr, c);
        for (int64_t j = 0; j < c; ++j) yr[j] = xr[j] - m;
        vector_exp(yr, yr, c);
        const T s = vector_sum(yr, c);
        const T r = T(1) / s;
        for (int64_t j = 0; j < c; ++j) yr[j] *= r;
        row_loss[static_cast<size_t>(i)] = static_cast<double>(std::log(s) + m - xr[pt[i]]);
      }
    });
    double total = 0;
    for (double v : row_loss) total += v;
    loss.data<T>()[0] = static_cast<T>(total / static_cast<double>(n));
  });
}

void sce_grad_kernel(const Array& prob, const Array& t, const Array& gloss, Array& gx) {
  const int64_t n = prob.shape()[0], c = prob.shape()[1];
  dispatch_floating(prob.dtype(), "softmax_cross_entropy", [&](auto tag) {
    using T = decltype(tag);
    const T coeff = gloss.data<T>()[0] / static_cast<T>(n);
    const T* py = prob.data<T>();
    T* pg = gx.data<T>();
    const int32_t* pt = t.data<int32_t>();
    par_map(py, pg, n * c, [coeff](T v) { return v * coeff; });
    for (int64_t i = 0; i < n; ++i) pg[i * c + pt[i]] -= coeff;
  });
}

}  // namespace

void register_softmax_cross_entropy_kernels() {
  kernels::softmax_cross_entropy.set(CH_DEVICE_CPU, sce_kernel);
  kernels::softmax_cross_entropy_grad.set(CH_DEVICE_CPU, sce_grad_kernel);
}

}  // namespace chainerc::cpu
