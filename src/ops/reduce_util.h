// Shared by the reductions over a set of axes (math/reduce.cpp) and the
// softmax family (activation/softmax_axis.cpp): the axes resolved against a
// shape, the extremum kernel's call, and constants of an input's volatility.
#pragma once

#include <cstdint>
#include <vector>

#include "core/array.h"
#include "core/variable.h"

namespace chainerc::ops {

struct ReducedAxes {
  std::vector<bool> reduced;  // per axis of x
  Shape kept;                 // x's shape with extent 1 on the reduced axes
  Shape dropped;              // x's shape without the reduced axes
  int64_t count = 1;          // elements per reduction
};

// `axes` (naxes entries, negative from the end; naxes 0: every axis) against
// x's shape: CH_ERR_INVALID_ARGUMENT naming `who` and the axis when one is out
// of range or repeated.
ReducedAxes reduced_axes(const char* who, const Shape& x, const int32_t* axes, int32_t naxes);

// The maximum (is_min: minimum) of float x over r's axes, in r.kept; index
// (when given) gets the int32 positions. CH_ERR_SHAPE for an empty reduction.
Array extreme_of(const char* who, const Array& x, const ReducedAxes& r, bool is_min, Array* index);

// A constant (no gradient) with x's volatility.
VarPtr constant_like(const VarPtr& x, const Array& a);

// log(sum(exp(x))) over r's axes, in r.kept (differentiable).
VarPtr logsumexp_kept(const char* who, const VarPtr& x, const ReducedAxes& r);

}  // namespace chainerc::ops
