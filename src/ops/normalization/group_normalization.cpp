// group_normalization (Chainer 7's F.group_normalization(x, groups, gamma,
// beta, eps)): x (N, C, ...) with C divisible by groups; per sample, the
// C / groups channels of each group and their trailing positions are
// normalized together (mean, biased variance), then channel c is scaled by
// gamma[c] and shifted by beta[c]. The node is row_normalization.cpp's, on
// x viewed as (N groups, (C / groups) R).
#include "ops/normalization/row_normalization.h"
#include "ops/ops.h"

namespace chainerc::ops {

VarPtr group_normalization(const VarPtr& x, int32_t groups, const VarPtr& gamma, const VarPtr& beta,
                           double eps) {
  const char* who = "group_normalization";
  const Array& xa = x->data;
  if (xa.ndim() < 2)
    fail(CH_ERR_SHAPE, who, ": x has shape ", xa.shape().to_string(), "; (N, C, ...) is expected");
  const int64_t N = xa.shape()[0], C = xa.shape()[1];
  check_row_norm_params(who, xa, C, gamma->data, &beta->data);
  if (groups < 1) fail(CH_ERR_INVALID_ARGUMENT, who, ": groups ", groups, " must be positive");
  if (C % groups != 0)
    fail(CH_ERR_INVALID_ARGUMENT, who, ": the number of channels ", C,
         " is not divisible by groups ", groups);
  check_row_norm_eps(who, eps);
  int64_t R = 1;
  for (int32_t i = 2; i < xa.ndim(); ++i) R *= xa.shape()[i];
  const int64_t D = C / groups * R;
  return row_normalization({who, "GroupNormalization", {N * groups, D, groups, R, true, eps}, N}, x,
                           gamma, beta);
}

}  // namespace chainerc::ops
