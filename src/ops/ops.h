// Entry points of the built-in differentiable functions. Each is defined in
// its own file (ops/<group>/<name>.cpp) with its forward and backward.
#pragma once

#include "core/variable.h"

namespace chainerc::ops {

// math/
VarPtr add(const VarPtr& a, const VarPtr& b);
VarPtr sub(const VarPtr& a, const VarPtr& b);
VarPtr mul(const VarPtr& a, const VarPtr& b);
VarPtr div(const VarPtr& a, const VarPtr& b);
VarPtr add_scalar(const VarPtr& x, double s);
VarPtr sub_scalar(const VarPtr& x, double s);   // x - s
VarPtr rsub_scalar(const VarPtr& x, double s);  // s - x
VarPtr mul_scalar(const VarPtr& x, double s);
VarPtr div_scalar(const VarPtr& x, double s);   // x / s
VarPtr rdiv_scalar(const VarPtr& x, double s);  // s / x
VarPtr neg(const VarPtr& x);
VarPtr pow_scalar(const VarPtr& x, double p);   // x ** p
VarPtr rpow_scalar(const VarPtr& x, double s);  // s ** x
VarPtr exp(const VarPtr& x);
VarPtr log(const VarPtr& x);
VarPtr sum(const VarPtr& x);
VarPtr sum_axis(const VarPtr& x, int32_t axis, bool keepdims);

// array/
VarPtr reshape(const VarPtr& x, const Shape& shape);  // one extent may be -1
VarPtr identity(const VarPtr& x);
VarPtr broadcast_to(const VarPtr& x, const Shape& shape);

}  // namespace chainerc::ops
