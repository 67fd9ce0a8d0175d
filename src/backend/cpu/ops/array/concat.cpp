// CPU kernels of concat and its split: one memcpy per piece and outer index.
#include <cstring>
#include <vector>

#include "backend/cpu/kernel_list.h"
#include "kernels/array.h"

namespace chainerc::cpu {
namespace {

// Copies the pieces into y (forward) or y into the pieces (backward).
void copy_pieces(const std::vector<Array>& pieces, const Array& y, int32_t axis, bool into_y) {
  const size_t elem = dtype_size(y.dtype());
  const AxisSplit ys = split_at_axis(y.shape(), axis);
  const int64_t outer = ys.outer, inner = ys.inner;
  const size_t row = static_cast<size_t>(ys.extent * inner) * elem;
  char* py = static_cast<char*>(y.raw());
  size_t offset = 0;
  for (const Array& x : pieces) {
    const size_t chunk = static_cast<size_t>(x.shape()[axis] * inner) * elem;
    char* px = static_cast<char*>(x.raw());
    if (chunk)
      for (int64_t o = 0; o < outer; ++o) {
        char* yp = py + static_cast<size_t>(o) * row + offset;
        char* xp = px + static_cast<size_t>(o) * chunk;
        if (into_y)
          std::memcpy(yp, xp, chunk);
        else
          std::memcpy(xp, yp, chunk);
      }
    offset += chunk;
  }
}

void concat_kernel(const std::vector<Array>& xs, int32_t axis, Array& y) {
  copy_pieces(xs, y, axis, true);
}
void concat_split_kernel(const Array& y, int32_t axis, std::vector<Array>& pieces) {
  copy_pieces(pieces, y, axis, false);
}

}  // namespace

void register_concat_kernels() {
  kernels::concat.set(CH_DEVICE_CPU, concat_kernel);
  kernels::concat_split.set(CH_DEVICE_CPU, concat_split_kernel);
}

}  // namespace chainerc::cpu
