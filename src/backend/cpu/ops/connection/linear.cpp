// CPU kernel of Linear's bias gradient (its products go through the gemm kernel).
#include <algorithm>

#include "backend/cpu/kernel_list.h"
#include "backend/cpu/parallel.h"
#include "backend/cpu/simd_clones.h"
#include "kernels/connection.h"

namespace chainerc::cpu {
namespace {

// gb[j] += gy[i][j] for the columns [b, e), row after row: every column adds
// its rows in the same order at any vector width and any split, so the bits
// do not depend on the machine or the thread count.
template <typename T>
CH_SIMD_CLONES void add_column_sums(const T* __restrict gy, T* __restrict gb, int64_t rows,
                                    int64_t cols, int64_t b, int64_t e) {
  for (int64_t i = 0; i < rows; ++i) {
    const T* row = gy + i * cols;
    for (int64_t j = b; j < e; ++j) gb[j] += row[j];
  }
}

void linear_bias_grad(const Array& gy, Array& gb) {
  const int64_t rows = gy.shape()[0], cols = gb.size();
  dispatch_floating(gy.dtype(), "Linear", [&](auto t) {
    using T = decltype(t);
    const T* pgy = gy.data<T>();
    T* pgb = gb.data<T>();
    // Split the columns so that each part sums about kElementwiseGrain elements.
    const int64_t grain = std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(1, rows));
    parallel_for(cols, grain,
                 [=](int64_t b, int64_t e) { add_column_sums(pgy, pgb, rows, cols, b, e); });
  });
}

}  // namespace

void register_linear_kernels() { kernels::linear_bias_grad.set(CH_DEVICE_CPU, linear_bias_grad); }

}  // namespace chainerc::cpu
