// Softmax over contiguous rows, shared by the softmax and
// softmax_cross_entropy kernels. Rows go through exp in blocks of
// kSoftmaxBlockElements / c rows (one row when c is larger), one call each
// rather than one per row: with ten classes the per-row calls took most of
// the time. Blocks start at fixed rows and threads take whole blocks, so every
// element takes the same path through vector_exp (vector body or tail) at any
// thread count, and the bits do not depend on it.
#pragma once

#include <algorithm>
#include <cstdint>

#include "backend/cpu/parallel.h"
#include "backend/cpu/vector_math.h"

namespace chainerc::cpu {

constexpr int64_t kSoftmaxBlockElements = 256;

// y = softmax(x) over each of the rows [0, n) of c elements. After each block,
// block_done(first_row, rows, row_max, row_sum) with each row's maximum and
// its sum of exp(x - max) (rows <= kSoftmaxBlockElements; row_sum may be
// overwritten).
template <typename T, typename F>
void softmax_rows(const T* x, T* y, int64_t n, int64_t c, F&& block_done) {
  if (n <= 0 || c <= 0) return;
  const int64_t block_rows = std::max<int64_t>(1, kSoftmaxBlockElements / c);
  const int64_t blocks = (n + block_rows - 1) / block_rows;
  const int64_t grain = std::max<int64_t>(1, kElementwiseGrain / (block_rows * c));
  parallel_for(blocks, grain, [&](int64_t bb, int64_t be) {
    T row_max[kSoftmaxBlockElements], row_sum[kSoftmaxBlockElements];
    for (int64_t blk = bb; blk < be; ++blk) {
      const int64_t r0 = blk * block_rows, rows = std::min(block_rows, n - r0);
      for (int64_t i = 0; i < rows; ++i) {
        const T* xr = x + (r0 + i) * c;
        T* yr = y + (r0 + i) * c;
        const T m = vector_max(xr, c);
        row_max[i] = m;
        for (int64_t j = 0; j < c; ++j) yr[j] = xr[j] - m;
      }
      vector_exp(y + r0 * c, y + r0 * c, rows * c);
      for (int64_t i = 0; i < rows; ++i) {
        T* yr = y + (r0 + i) * c;
        const T s = vector_sum(yr, c);
        const T r = T(1) / s;
        for (int64_t j = 0; j < c; ++j) yr[j] *= r;
        row_sum[i] = s;
      }
      block_done(r0, rows, static_cast<const T*>(row_max), static_cast<T*>(row_sum));
    }
  });
}

}  // namespace chainerc::cpu
