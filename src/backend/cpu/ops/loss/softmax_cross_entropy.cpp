// CPU kernels of softmax_cross_entropy: blocks of rows through the vector math
// library (max, exp, sum, log), the row losses added in order.
#include <algorithm>
#include <cmath>
#include <vector>

#include "backend/cpu/kernel_list.h"
#include "backend/cpu/pointwise.h"
#include "backend/cpu/vector_math.h"
#include "kernels/loss.h"

namespace chainerc::cpu {
namespace {

// Rows go through exp and log in blocks of kBlockElements / c rows (one row
// when c is larger), one call each rather than one per row: with ten classes
// the per-row calls took most of the time. Blocks start at fixed rows, so
// every element takes the same path through vector_exp (vector body or tail)
// at any thread count, and the bits do not depend on it.
constexpr int64_t kBlockElements = 256;

void sce_kernel(const Array& x, const Array& t, Array& prob, Array& loss) {
  const int64_t n = x.shape()[0], c = x.shape()[1];
  const int64_t block_rows = std::max<int64_t>(1, kBlockElements / std::max<int64_t>(1, c));
  const int64_t blocks = (n + block_rows - 1) / block_rows;
  dispatch_floating(x.dtype(), "softmax_cross_entropy", [&](auto tag) {
    using T = decltype(tag);
    const T* px = x.data<T>();
    T* py = prob.data<T>();
    const int32_t* pt = t.data<int32_t>();
    std::vector<double> row_loss(static_cast<size_t>(n));
    const int64_t grain =
        std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(1, block_rows * c));
    parallel_for(blocks, grain, [&](int64_t bb, int64_t be) {
      T row_max[kBlockElements], row_log[kBlockElements];  // block_rows <= kBlockElements
      for (int64_t blk = bb; blk < be; ++blk) {
        const int64_t r0 = blk * block_rows, rows = std::min(block_rows, n - r0);
        for (int64_t i = 0; i < rows; ++i) {
          const T* xr = px + (r0 + i) * c;
          T* yr = py + (r0 + i) * c;
          const T m = vector_max(xr, c);
          row_max[i] = m;
          for (int64_t j = 0; j < c; ++j) yr[j] = xr[j] - m;
        }
        vector_exp(py + r0 * c, py + r0 * c, rows * c);
        for (int64_t i = 0; i < rows; ++i) {
          T* yr = py + (r0 + i) * c;
          const T s = vector_sum(yr, c);
          const T r = T(1) / s;
          for (int64_t j = 0; j < c; ++j) yr[j] *= r;
          row_log[i] = s;
        }
        vector_log(row_log, row_log, rows);
        for (int64_t i = 0; i < rows; ++i) {
          const T* xr = px + (r0 + i) * c;
          row_loss[static_cast<size_t>(r0 + i)] =
              static_cast<double>(row_log[i] + row_max[i] - xr[pt[r0 + i]]);
        }
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
