// CPU kernel of transpose: batched matrix transposes in cache tiles, other
// permutations row by row of the output; elements moved as 4- or 8-byte words.
#include <algorithm>
#include <cstring>
#include <vector>

#include "backend/cpu/kernel_list.h"
#include "backend/cpu/parallel.h"
#include "kernels/array.h"

namespace chainerc::cpu {
namespace {

// out = x with axes permuted: out axis i is x axis perm[i].
// out = x^T for each of `batch` (rows, cols) matrices, in square tiles so
// that both the reads and the writes stay within a few cache lines.
template <typename T>
void transpose_matrices(const T* x, int64_t batch, int64_t rows, int64_t cols, T* out) {
  constexpr int64_t kTile = 32;
  const int64_t row_tiles = (rows + kTile - 1) / kTile, col_tiles = (cols + kTile - 1) / kTile;
  const int64_t tiles = batch * row_tiles * col_tiles;
  parallel_for(tiles, std::max<int64_t>(1, kElementwiseGrain / (kTile * kTile)),
               [&](int64_t t0, int64_t t1) {
                 for (int64_t t = t0; t < t1; ++t) {
                   const int64_t b = t / (row_tiles * col_tiles);
                   const int64_t i0 = (t / col_tiles) % row_tiles * kTile;
                   const int64_t j0 = t % col_tiles * kTile;
                   const int64_t i1 = std::min(rows, i0 + kTile);
                   const int64_t j1 = std::min(cols, j0 + kTile);
                   const T* __restrict src = x + b * rows * cols;
                   T* __restrict dst = out + b * rows * cols;
                   for (int64_t j = j0; j < j1; ++j)
                     for (int64_t i = i0; i < i1; ++i) dst[j * rows + i] = src[i * cols + j];
                 }
               });
}

template <typename T>
void permute(const T* x, const Shape& xs, const std::vector<int32_t>& perm, T* out) {
  const int32_t nd = xs.ndim();
  const int64_t n = xs.size();
  if (n == 0) return;
  if (nd == 0) {
    out[0] = x[0];
    return;
  }
  // The common case, a matrix transpose (possibly batched over leading axes
  // that stay in place), goes through tiles.
  bool last_two_swapped = nd >= 2 && perm[nd - 2] == nd - 1 && perm[nd - 1] == nd - 2;
  for (int32_t i = 0; i + 2 < nd && last_two_swapped; ++i) last_two_swapped = perm[i] == i;
  if (last_two_swapped && xs[nd - 1] > 1 && xs[nd - 2] > 1) {
    const int64_t rows = xs[nd - 2], cols = xs[nd - 1];
    transpose_matrices(x, n / (rows * cols), rows, cols, out);
    return;
  }
  int64_t xstride[CH_MAX_NDIM], st[CH_MAX_NDIM], os[CH_MAX_NDIM];
  int64_t s = 1;
  for (int32_t i = nd - 1; i >= 0; --i) {
    xstride[i] = s;
    s *= xs[i];
  }
  for (int32_t i = 0; i < nd; ++i) {
    st[i] = xstride[perm[i]];
    os[i] = xs[perm[i]];
  }
  const int64_t inner = os[nd - 1], inner_stride = st[nd - 1];
  const int64_t rows = n / inner;
  // Each output row (last axis) starts at an input offset found from its index.
  parallel_for(rows, std::max<int64_t>(1, kElementwiseGrain / inner), [&](int64_t r0, int64_t r1) {
    int64_t idx[CH_MAX_NDIM] = {};
    int64_t rem = r0, off = 0;
    for (int32_t d = nd - 2; d >= 0; --d) {
      idx[d] = rem % os[d];
      rem /= os[d];
      off += idx[d] * st[d];
    }
    for (int64_t r = r0; r < r1; ++r) {
      T* o = out + r * inner;
      const T* src = x + off;
      if (inner_stride == 1)
        std::memcpy(o, src, static_cast<size_t>(inner) * sizeof(T));
      else
        for (int64_t k = 0; k < inner; ++k) o[k] = src[k * inner_stride];
      for (int32_t d = nd - 2; d >= 0; --d) {
        off += st[d];
        if (++idx[d] < os[d]) break;
        off -= st[d] * os[d];
        idx[d] = 0;
      }
    }
  });
}

void transpose_kernel(const Array& x, const std::vector<int32_t>& perm, Array& y) {
  if (dtype_size(x.dtype()) == 8)
    permute(x.data<uint64_t>(), x.shape(), perm, y.data<uint64_t>());
  else
    permute(x.data<uint32_t>(), x.shape(), perm, y.data<uint32_t>());
}

}  // namespace

void register_transpose_kernels() { kernels::transpose.set(CH_DEVICE_CPU, transpose_kernel); }

}  // namespace chainerc::cpu
