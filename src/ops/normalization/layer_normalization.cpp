// layer_normalization (Chainer 7's F.layer_normalization(x, gamma, beta,
// eps)): each row of x's last axis (C values) normalized by its mean and
// biased variance, then y = gamma x_hat + beta. Chainer 7 takes x (N, C);
// an N-d x (..., C) is normalized over its last axis (PyTorch's
// layer_norm(x, (C,))). The node is row_normalization.cpp's.
#include "ops/normalization/row_normalization.h"
#include "ops/ops.h"

namespace chainerc::ops {

VarPtr layer_normalization(const VarPtr& x, const VarPtr& gamma, const VarPtr& beta, double eps) {
  const char* who = "layer_normalization";
  const Array& xa = x->data;
  if (xa.ndim() < 2)
    fail(CH_ERR_SHAPE, who, ": x has shape ", xa.shape().to_string(),
         "; (N, C) or (..., C) is expected");
  const int64_t C = xa.shape()[xa.ndim() - 1];
  check_row_norm_params(who, xa, C, gamma->data, &beta->data);
  check_row_norm_eps(who, eps);
  int64_t rows = 1;
  for (int32_t i = 0; i + 1 < xa.ndim(); ++i) rows *= xa.shape()[i];
  return row_normalization({who, "LayerNormalization", {rows, C, 1, 1, true, eps}, rows}, x, gamma,
                           beta);
}

}  // namespace chainerc::ops
