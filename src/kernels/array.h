// Kernels of the array manipulation functions (ops/array) that move data:
// concat and its split, transpose. Any dtype. Arguments are checked by the op;
// outputs are allocated by the op on the inputs' device. broadcast_to is
// kernels::broadcast_to of kernels/math.h; reshape and identity share data,
// and copy crosses devices through the devices' backends (Array::to_device).
#pragma once

#include <vector>

#include "kernels/registry.h"

namespace chainerc::kernels {

// y = the arrays xs joined along `axis` (xs of y's dtype, equal extents
// except along the axis, whose extents add up to y's).
inline Kernel<void(const std::vector<Array>& xs, int32_t axis, Array& y)> concat{"concat"};
// The inverse: y cut along `axis` into the allocated pieces, in order.
inline Kernel<void(const Array& y, int32_t axis, std::vector<Array>& pieces)> concat_split{
    "concat_split"};

// y = x with axes permuted (NumPy's transpose): y's axis i is x's axis
// perm[i]; perm is a permutation of 0..ndim-1 and y has the permuted shape.
inline Kernel<void(const Array& x, const std::vector<int32_t>& perm, Array& y)> transpose{
    "transpose"};

// A strided walk of an array x for an array y of `ndim` axes (the gather's
// output, the scatter's source): y's element (i_0, ..., i_{n-1}) is x's flat
// element offset + sum_k i_k stride[k] (strides in elements, any sign, 0 to
// repeat), plus, where an int32 `index` array is given, index[sum_k i_k
// index_stride[k]] (+ index_extent where negative) times index_scale. The op
// checks that every position is inside x and every index inside
// [-index_extent, index_extent).
struct StridedView {
  int64_t offset = 0;
  int64_t stride[CH_MAX_NDIM] = {};
  int64_t index_stride[CH_MAX_NDIM] = {};
  int64_t index_scale = 0;
  int64_t index_extent = 0;
};
// y = x read through the view over y's shape (get_item, flip, tile, ...);
// index undefined (Array()) when the view has none. Any dtype.
inline Kernel<void(const Array& x, const StridedView& view, const Array& index, Array& y)> gather{
    "gather"};
// The adjoint: x[view position of i] += y[i] for every element i of y
// (positions met more than once add up). Any dtype.
inline Kernel<void(const Array& y, const StridedView& view, const Array& index, Array& x)>
    scatter_add{"scatter_add"};

}  // namespace chainerc::kernels
