// rms_normalization (PyTorch's F.rms_norm(x, (C,), weight=gamma, eps);
// Chainer 7 has none): each row of x's last axis (C values) divided by
// sqrt(mean(x^2) + eps), times gamma. The node is row_normalization.cpp's
// (no mean subtracted, no beta).
#include "ops/normalization/row_normalization.h"
#include "ops/ops.h"

namespace chainerc::ops {

VarPtr rms_normalization(const VarPtr& x, const VarPtr& gamma, double eps) {
  const char* who = "rms_normalization";
  const Array& xa = x->data;
  if (xa.ndim() < 1)
    fail(CH_ERR_SHAPE, who, ": x is 0-d (shape ", xa.shape().to_string(),
         "); (..., C) is expected");
  const int64_t C = xa.shape()[xa.ndim() - 1];
  check_row_norm_params(who, xa, C, gamma->data, nullptr);
  check_row_norm_eps(who, eps);
  int64_t rows = 1;
  for (int32_t i = 0; i + 1 < xa.ndim(); ++i) rows *= xa.shape()[i];
  return row_normalization({who, "RMSNormalization", {rows, C, 1, 1, false, eps}, rows}, x, gamma,
                           nullptr);
}

}  // namespace chainerc::ops
