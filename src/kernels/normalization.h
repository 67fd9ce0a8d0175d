// Kernels of the normalization functions (ops/normalization). Arguments are
// checked by the op; outputs are allocated by the op on x's device.
#pragma once

#include "kernels/registry.h"

namespace chainerc::kernels {

// BatchNormalization on x viewed as (L, C, R): statistics per c over L and R.
struct BatchNorm {
  int64_t L, C, R;
  bool use_batch;  // batch statistics (train, finetune) or the running averages (test)
  double decay;    // running averages: avg = decay * avg + (1 - decay) * stat
  double adjust;   // m / (m - 1) for the unbiased variance, m = L * R
  double eps;
};
// y = gamma * x_hat + beta with x_hat = (x - mean) * inv_std and inv_std =
// 1 / sqrt(var + eps) per c (gamma, beta, avg_mean, avg_var, mean, inv_std of
// C elements). With use_batch, mean and var are the batch's (summed per row
// in the element type, rows added in double; var biased), avg_mean/avg_var
// move, and the kernel writes the batch's mean and inv_std into `mean` and
// `inv_std` for backward (cuDNN's saved mean and saved inverse variance).
// Without use_batch, mean and var are avg_mean and avg_var and `mean` and
// `inv_std` are not written (the op keeps copies of the averages instead).
inline Kernel<void(const Array& x, const Array& gamma, const Array& beta, const BatchNorm& p,
                   Array& avg_mean, Array& avg_var, Array& y, Array& mean, Array& inv_std)>
    batch_norm_forward{"batch_norm_forward"};
// x_hat = (x - mean) * inv_std recomputed from forward's x; ggamma +=
// sum(gy * x_hat), gbeta += sum(gy) per c; gx = gamma * inv_std * (gy -
// (x_hat * ggamma_c + gbeta_c) / m) with use_batch, else gamma * inv_std * gy
// (ggamma_c, gbeta_c: this call's sums). `mean` and `stat`: with use_batch
// forward's `mean` and `inv_std`; without, the running mean and variance
// forward normalized with, and inv_std = 1 / sqrt(stat + eps).
inline Kernel<void(const Array& x, const Array& gy, const Array& mean, const Array& stat,
                   const Array& gamma, const BatchNorm& p, Array& ggamma, Array& gbeta, Array& gx)>
    batch_norm_backward{"batch_norm_backward"};

// Row normalizations (layer_normalization, rms_normalization,
// group_normalization) on x viewed as (rows, D): statistics per row over its
// D elements, then an affine map per column class. Element (i, j) takes the
// parameter index (i % groups) * (D / R) + j / R (layer and rms: groups = R =
// 1, the column; group_normalization on (N, C, R...) x: rows = N groups, D =
// (C / groups) R, the channel). gamma and beta have groups * D / R elements.
struct RowNorm {
  int64_t rows, D;
  int64_t groups, R;
  bool center;  // subtract the row mean (layer, group); rms: no mean, no beta
  double eps;
};
// mean = sum(x) / D (0 without center), var = sum((x - mean)^2) / D (in
// double), inv_std = 1 / sqrt(var + eps); y = (x - mean) inv_std gamma +
// beta (beta undefined: none). Writes the rows' mean and inv_std (`rows`
// elements of x's dtype) for backward.
inline Kernel<void(const Array& x, const Array& gamma, const Array& beta, const RowNorm& p,
                   Array& y, Array& mean, Array& inv_std)>
    row_norm_forward{"row_norm_forward"};
// From forward's x, mean and inv_std: x_hat = (x - mean) inv_std, g = gy
// gamma; gx = inv_std (g - mean(g) - x_hat mean(g x_hat)) per row (without
// center: no mean(g) term); ggamma = sum(gy x_hat) and gbeta = sum(gy) per
// parameter index (written, not accumulated; gbeta undefined: not wanted; gx
// undefined: not wanted).
inline Kernel<void(const Array& x, const Array& gy, const Array& gamma, const Array& mean,
                   const Array& inv_std, const RowNorm& p, Array& gx, Array& ggamma, Array& gbeta)>
    row_norm_backward{"row_norm_backward"};

// LocalResponseNormalization across axis 1 of x viewed as (N, C, R): window
// of channels c - n/2 .. c + n/2 (clipped).
struct Lrn {
  int64_t n;
  double k, alpha, beta;
};
// unit_scale = k + alpha * window_sum(x^2), scale = unit_scale^-beta, y = x * scale.
inline Kernel<void(const Array& x, const Lrn& p, Array& y)> lrn_forward{"lrn_forward"};
// gx = gy * scale - 2 alpha beta x * window_sum(y gy / unit_scale), with
// unit_scale and scale recomputed from x (forward keeps only x and y, what
// cudnnLRNCrossChannelBackward takes too).
inline Kernel<void(const Array& x, const Array& y, const Array& gy, const Lrn& p, Array& gx)>
    lrn_backward{"lrn_backward"};

}  // namespace chainerc::kernels
