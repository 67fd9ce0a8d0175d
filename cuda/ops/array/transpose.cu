// CUDA kernels of transpose. A batched matrix transpose (the last two axes
// swapped, the leading ones in place) goes through 32 x 32 tiles in shared
// memory so that both the reads and the writes are coalesced; any other
// permutation is a thread per output element reading x through x's strides
// (an OffsetCalc over y's shape, cuda/ops/index.cuh). Any dtype: elements are moved as unsigned
// integers of their size.
#include <vector>

#include "cuda/ops/elementwise.cuh"
#include "cuda/ops/kernel_list.h"
#include "kernels/array.h"

namespace chainerc::cuda {
namespace {

constexpr int kTile = 32;
constexpr int kTileRows = kBlockThreads / kTile;  // rows of a tile a pass of the block covers

// out[b] = x[b]^T for `batch` (rows, cols) matrices; block b does tiles
// b, b + gridDim.x, ... (every thread of the block the same ones: the
// barriers are reached by all).
template <typename E>
__global__ void transpose_tiles_kernel(const E* __restrict__ x, E* __restrict__ out, int64_t batch,
                                       int64_t rows, int64_t cols) {
  __shared__ E tile[kTile][kTile + 1];  // +1: no bank conflicts on the column reads
  const int tx = threadIdx.x % kTile, ty = threadIdx.x / kTile;
  const int64_t row_tiles = (rows + kTile - 1) / kTile, col_tiles = (cols + kTile - 1) / kTile;
  const int64_t tiles = batch * row_tiles * col_tiles;
  for (int64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
    const int64_t b = t / (row_tiles * col_tiles);
    const int64_t i0 = (t / col_tiles) % row_tiles * kTile, j0 = t % col_tiles * kTile;
    const E* src = x + b * rows * cols;
    E* dst = out + b * rows * cols;
    for (int r = ty; r < kTile; r += kTileRows) {
      const int64_t i = i0 + r, j = j0 + tx;
      if (i < rows && j < cols) tile[r][tx] = src[i * cols + j];
    }
    __syncthreads();
    for (int r = ty; r < kTile; r += kTileRows) {
      const int64_t j = j0 + r, i = i0 + tx;
      if (i < rows && j < cols) dst[j * rows + i] = tile[tx][r];
    }
    __syncthreads();  // before the next tile overwrites this one
  }
}

// y[i] = x[offset of y's index i through x's strides].
template <typename E, typename U>
__global__ void permute_kernel(OffsetCalc<U, 1> oc, const E* __restrict__ x, E* __restrict__ y,
                               U n) {
  for (U i = grid_start_as<U>(); i < n; i += grid_step_as<U>()) y[i] = x[oc(i)];
}

template <typename E>
void permute(const Array& x, const std::vector<int32_t>& perm, Array& y) {
  const Shape& xs = x.shape();
  const int32_t nd = xs.ndim();
  const int64_t n = xs.size();
  if (n == 0) return;
  const E* px = static_cast<const E*>(x.raw());
  E* py = static_cast<E*>(y.raw());
  bool last_two_swapped = nd >= 2 && perm[nd - 2] == nd - 1 && perm[nd - 1] == nd - 2;
  for (int32_t i = 0; i + 2 < nd && last_two_swapped; ++i) last_two_swapped = perm[i] == i;
  if (last_two_swapped && xs[nd - 1] > 1 && xs[nd - 2] > 1) {
    const int64_t rows = xs[nd - 2], cols = xs[nd - 1], batch = n / (rows * cols);
    const int64_t tiles = batch * ((rows + kTile - 1) / kTile) * ((cols + kTile - 1) / kTile);
    check_launch(launch(transpose_tiles_kernel<E>, blocks_for(tiles * kBlockThreads), kBlockThreads,
                        0, nullptr, px, py, batch, rows, cols),
                 "transpose");
    return;
  }
  // y's axis i is x's axis perm[i]: y's extents, x's strides.
  int64_t xstride[CH_MAX_NDIM];
  int64_t s = 1;
  for (int32_t i = nd - 1; i >= 0; --i) {
    xstride[i] = s;
    s *= xs[i];
  }
  int64_t extent[CH_MAX_NDIM], stride[CH_MAX_NDIM];
  for (int32_t i = 0; i < nd; ++i) {
    extent[i] = xs[perm[i]];
    stride[i] = xstride[perm[i]];
  }
  const int64_t* const strides[1] = {stride};
  dispatch_index(n, [&](auto u) {
    using U = decltype(u);
    launch_elementwise("transpose", n, permute_kernel<E, U>,
                       make_offset_calc<U, 1>(nd, extent, strides), px, py, static_cast<U>(n));
  });
}

void transpose_kernel(const Array& x, const std::vector<int32_t>& perm, Array& y) {
  DeviceGuard guard(x.device().index);
  if (dtype_size(x.dtype()) == 8)
    permute<uint64_t>(x, perm, y);
  else
    permute<uint32_t>(x, perm, y);
}

}  // namespace

void register_transpose_kernels() { kernels::transpose.set(CH_DEVICE_CUDA, transpose_kernel); }

}  // namespace chainerc::cuda
