// Per-element math of the normalization functions (BatchNormalization,
// local_response_normalization). One definition, built by the host compiler
// into the CPU backend and by nvcc into the CUDA kernels. Called with the
// element type T (float or double); per-channel values (mean, 1 / std,
// gamma, beta, the gradient sums) arrive already converted to T.
#pragma once

#include "kernels/host_device.h"

namespace chainerc::pointwise {

// BatchNormalization's normalized element: x_hat = (x - mean) * inv_std
// (forward, and backward's recomputation from x).
struct BatchNormHat {
  template <typename T>
  CH_HOST_DEVICE T operator()(T x, T mean, T inv_std) const {
    return (x - mean) * inv_std;
  }
};
// BatchNormalization forward for one element of channel c: y = gamma * x_hat + beta.
struct BatchNormApply {
  template <typename T>
  CH_HOST_DEVICE T operator()(T x, T mean, T inv_std, T gamma, T beta) const {
    return gamma * BatchNormHat{}(x, mean, inv_std) + beta;
  }
};
// BatchNormalization's gradient of one element with batch statistics:
// coeff (gy - (x_hat mean_ggamma + mean_gbeta)), coeff = gamma * inv_std,
// mean_ggamma and mean_gbeta the channel's sums divided by m.
struct BatchNormGrad {
  template <typename T>
  CH_HOST_DEVICE T operator()(T gy, T x_hat, T coeff, T mean_ggamma, T mean_gbeta) const {
    return coeff * (gy - (x_hat * mean_ggamma + mean_gbeta));
  }
};

// LRN's unit_scale from the window sum of squares s: k + alpha s.
struct LrnUnitScale {
  template <typename T>
  CH_HOST_DEVICE T operator()(T s, T k, T alpha) const {
    return k + alpha * s;
  }
};
// LRN's scale from unit_scale u: u^-beta.
struct LrnScale {
  template <typename T>
  CH_HOST_DEVICE T operator()(T u, T beta) const {
    return pow(u, -beta);
  }
};
// LRN's gradient of one element: gy scale - 2 alpha beta x window_sum, where
// window_sum adds y gy / unit_scale over the channel window (c2 = 2 alpha beta).
struct LrnGrad {
  template <typename T>
  CH_HOST_DEVICE T operator()(T gy, T x, T scale, T window_sum, T c2) const {
    return gy * scale - c2 * x * window_sum;
  }
};

}  // namespace chainerc::pointwise
