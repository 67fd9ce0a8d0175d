// Kernels of the evaluation functions (ops/evaluation). Arguments are checked
// by the op (labels with kernels::find_bad_label of kernels/loss.h); outputs
// are allocated by the op on the inputs' device.
#pragma once

#include "kernels/registry.h"

namespace chainerc::kernels {

// out (0-d, y's dtype) = the fraction of the N rows of y, viewed as (N, C),
// whose first maximum is at the int32 label t[i] (in [0, C)); NaN for N = 0.
inline Kernel<void(const Array& y, const Array& t, Array& out)> accuracy{"accuracy"};

}  // namespace chainerc::kernels
