// Kernels of the noise functions (ops/noise). Arguments are checked by the
// op; outputs are allocated by the op on the input's device. The mask's
// per-element math is in pointwise/noise.h.
#pragma once

#include <cstdint>

#include "kernels/registry.h"

namespace chainerc::kernels {

// Dropout in training for a ratio in [0, 1): mask[i] = 1 / (1 - ratio) or 0,
// drawn from (seed, i) by pointwise::DropoutMask, and y = x * mask (mask and
// y of x's shape and dtype). The backward pass is kernels::mul(gy, mask).
inline Kernel<void(const Array& x, uint64_t seed, double ratio, Array& mask, Array& y)> dropout{
    "dropout"};

}  // namespace chainerc::kernels
