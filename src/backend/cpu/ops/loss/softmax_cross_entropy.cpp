// CPU kernels of softmax_cross_entropy: the softmax of softmax_rows.h, each
// block's logs in one call, the row losses added in order.
#include <vector>

#include "backend/cpu/kernel_list.h"
#include "backend/cpu/pointwise.h"
#include "backend/cpu/softmax_rows.h"
#include "backend/cpu/vector_math.h"
#include "kernels/loss.h"

namespace chainerc::cpu {
namespace {

void sce_kernel(const Array& x, const Array& t, Array& prob, Array& loss) {
  const int64_t n = x.shape()[0], c = x.shape()[1];
  dispatch_floating(x.dtype(), "softmax_cross_entropy", [&](auto tag) {
    using T = decltype(tag);
    const T* px = x.data<T>();
    const int32_t* pt = t.data<int32_t>();
    std::vector<double> row_loss(static_cast<size_t>(n));
    softmax_rows(
        px, prob.data<T>(), n, c, [&](int64_t r0, int64_t rows, const T* row_max, T* row_sum) {
          vector_log(row_sum, row_sum, rows);  // a block's logs in one call
          for (int64_t i = 0; i < rows; ++i)
            row_loss[static_cast<size_t>(r0 + i)] =
                static_cast<double>(row_sum[i] + row_max[i] - px[(r0 + i) * c + pt[r0 + i]]);
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
