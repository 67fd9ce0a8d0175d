// CUDA kernels of concat and its split: one grid-stride copy per piece
// between the piece, viewed as (outer, chunk), and its columns
// [offset, offset + chunk) of y viewed as (outer, row). Any dtype: elements
// are moved as unsigned integers of their size.
#include <vector>

#include "cuda/ops/elementwise.cuh"
#include "cuda/ops/kernel_list.h"
#include "kernels/array.h"

namespace chainerc::cuda {
namespace {

// into_y: y[o, offset + k] = piece[o, k]; else the reverse.
template <typename E, typename U>
__global__ void copy_piece_kernel(E* __restrict__ piece, E* __restrict__ y, FastDivider<U> chunk,
                                  U row, U offset, bool into_y, U n) {
  for (U i = grid_start_as<U>(); i < n; i += grid_step_as<U>()) {
    const U o = chunk.div(i);
    const U k = o * row + offset + (i - o * chunk.d);
    if (into_y)
      y[k] = piece[i];
    else
      piece[i] = y[k];
  }
}

template <typename E>
void copy_pieces(const std::vector<Array>& pieces, const Array& y, int32_t axis, bool into_y) {
  const AxisSplit ys = split_at_axis(y.shape(), axis);
  const int64_t outer = ys.outer, inner = ys.inner, row = ys.extent * inner;
  int64_t offset = 0;
  for (const Array& x : pieces) {
    const int64_t chunk = x.shape()[axis] * inner;
    if (chunk > 0)
      dispatch_index(y.size(), [&](auto u) {
        using U = decltype(u);
        launch_elementwise(into_y ? "concat" : "concat backward", outer * chunk,
                           copy_piece_kernel<E, U>, static_cast<E*>(x.raw()),
                           static_cast<E*>(y.raw()), FastDivider<U>(static_cast<U>(chunk)),
                           static_cast<U>(row), static_cast<U>(offset), into_y,
                           static_cast<U>(outer * chunk));
      });
    offset += chunk;
  }
}

void copy_pieces(const std::vector<Array>& pieces, const Array& y, int32_t axis, bool into_y) {
  DeviceGuard guard(y.device().index);
  if (dtype_size(y.dtype()) == 8)
    copy_pieces<uint64_t>(pieces, y, axis, into_y);
  else
    copy_pieces<uint32_t>(pieces, y, axis, into_y);
}

void concat_kernel(const std::vector<Array>& xs, int32_t axis, Array& y) {
  copy_pieces(xs, y, axis, true);
}
void concat_split_kernel(const Array& y, int32_t axis, std::vector<Array>& pieces) {
  copy_pieces(pieces, y, axis, false);
}

}  // namespace

void register_concat_kernels() {
  kernels::concat.set(CH_DEVICE_CUDA, concat_kernel);
  kernels::concat_split.set(CH_DEVICE_CUDA, concat_split_kernel);
}

}  // namespace chainerc::cuda
