// The node shared by the row normalizations (layer_normalization.cpp,
// rms_normalization.cpp, group_normalization.cpp): x viewed as (rows, D),
// statistics per row, an affine map per parameter index (kernels::RowNorm).
#pragma once

#include "core/variable.h"
#include "kernels/normalization.h"

namespace chainerc::ops {

// How a row normalization sees its x (filled by the function after its checks).
struct RowNormView {
  const char* who;   // the function, for messages
  const char* node;  // the graph node's name
  kernels::RowNorm p;
  int64_t n;  // p.rows / p.groups (samples; rows for layer and rms)
};

// Applies the node to x, gamma and (beta null: none, rms) beta.
VarPtr row_normalization(const RowNormView& v, const VarPtr& x, const VarPtr& gamma,
                         const VarPtr& beta);

// Refuses eps < 0 or NaN (CH_ERR_INVALID_ARGUMENT naming `who` and eps).
void check_row_norm_eps(const char* who, double eps);
// gamma (and beta, when given) of shape (C,), x's dtype: CH_ERR_SHAPE /
// CH_ERR_DTYPE naming `who` and the shapes otherwise.
void check_row_norm_params(const char* who, const Array& x, int64_t C, const Array& gamma,
                           const Array* beta);

}  // namespace chainerc::ops
