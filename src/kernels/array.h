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

}  // namespace chainerc::kernels
