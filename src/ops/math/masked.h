// An internal differentiable function of maximum, minimum and where (and of
// their graph backwards): x where a constant mask is nonzero, else 0, or the
// complement. Its backward is itself applied to gy, so it is differentiable to
// any order. Defined in math/maximum.cpp.
#pragma once

#include "core/variable.h"

namespace chainerc::ops {

// x where `mask` (x's shape, dtype and device; 1 or 0) is nonzero, else 0; with
// `invert`, x where it is zero, else 0. Exact: an inf or NaN of x where the
// selection excludes it gives 0.
VarPtr masked(const VarPtr& x, const Array& mask, bool invert);

}  // namespace chainerc::ops
