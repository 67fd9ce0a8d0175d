// Per-element math of issue 42's activations (gelu, its tanh approximation,
// silu, softplus, elu, clipped_relu) and of their gradients, the kernels
// src/ops/manifest.py declares. Built by the host compiler into the CPU
// backend and by nvcc into the CUDA kernels; T is float or double.
#pragma once

#include <cmath>

#include "kernels/host_device.h"

namespace chainerc::pointwise {

#if !defined(__CUDACC__)
using std::erf;
using std::expm1;
#endif

// The logistic sigmoid 1 / (1 + exp(-x)) (0 and 1 at the ends, no NaN).
template <typename T>
CH_HOST_DEVICE T logistic(T x) {
  return T(1) / (T(1) + exp(-x));
}

// gelu (PyTorch's exact form): y = x Phi(x) = x (1 + erf(x / sqrt 2)) / 2;
// gx = gy (Phi(x) + x phi(x)), phi(x) = exp(-x^2 / 2) / sqrt(2 pi).
struct Gelu {
  template <typename T>
  CH_HOST_DEVICE T operator()(T x) const {
    return T(0.5) * x * (T(1) + erf(x * T(0.70710678118654752)));
  }
};
struct GeluGrad {
  // double erf and exp on a pack of two: over the CUDA kernels' register budget.
  template <typename T>
  static constexpr bool one_at_a_time = sizeof(T) == 8;
  template <typename T>
  CH_HOST_DEVICE T operator()(T gy, T x) const {
    const T cdf = T(0.5) * (T(1) + erf(x * T(0.70710678118654752)));
    const T pdf = T(0.39894228040143268) * exp(T(-0.5) * x * x);
    return gy * (cdf + x * pdf);
  }
};
// gelu with approximate='tanh' (PyTorch's): y = x (1 + tanh(u)) / 2,
// u = sqrt(2 / pi) (x + 0.044715 x^3);
// gx = gy ((1 + t) / 2 + x (1 - t^2) u' / 2), u' = sqrt(2 / pi) (1 + 3 0.044715 x^2).
struct GeluTanh {
  template <typename T>
  CH_HOST_DEVICE T operator()(T x) const {
    const T u = T(0.79788456080286536) * (x + T(0.044715) * x * x * x);
    return T(0.5) * x * (T(1) + tanh(u));
  }
};
struct GeluTanhGrad {
  template <typename T>
  CH_HOST_DEVICE T operator()(T gy, T x) const {
    const T u = T(0.79788456080286536) * (x + T(0.044715) * x * x * x);
    const T t = tanh(u);
    const T du = T(0.79788456080286536) * (T(1) + T(3 * 0.044715) * x * x);
    return gy * (T(0.5) * (T(1) + t) + T(0.5) * x * (T(1) - t * t) * du);
  }
};
// silu (PyTorch's; Chainer's swish with beta = 1): y = x s, s = sigmoid(x);
// gx = gy s (1 + x (1 - s)).
struct Silu {
  template <typename T>
  CH_HOST_DEVICE T operator()(T x) const {
    return x * logistic(x);
  }
};
struct SiluGrad {
  template <typename T>
  CH_HOST_DEVICE T operator()(T gy, T x) const {
    const T s = logistic(x);
    return gy * s * (T(1) + x * (T(1) - s));
  }
};
// softplus (Chainer's): y = log(1 + exp(beta x)) / beta, computed as
// (max(beta x, 0) + log1p(exp(-|beta x|))) / beta; gx = gy sigmoid(beta x).
struct Softplus {
  template <typename T>
  CH_HOST_DEVICE T operator()(T x, T beta) const {
    const T bx = beta * x;
    return ((bx > T(0) ? bx : T(0)) + log1p(exp(-fabs(bx)))) / beta;
  }
};
struct SoftplusGrad {
  template <typename T>
  CH_HOST_DEVICE T operator()(T gy, T x, T beta) const {
    return gy * logistic(beta * x);
  }
};
// elu (Chainer's): y = x for x > 0, alpha (exp(x) - 1) for x <= 0;
// gx = gy for x > 0, gy alpha exp(x) for x <= 0 (alpha at x = 0, as Chainer).
struct Elu {
  template <typename T>
  CH_HOST_DEVICE T operator()(T x, T alpha) const {
    return x > T(0) ? x : alpha * expm1(x);
  }
};
struct EluGrad {
  template <typename T>
  CH_HOST_DEVICE T operator()(T gy, T x, T alpha) const {
    return x > T(0) ? gy : gy * alpha * exp(x);
  }
};
// clipped_relu (Chainer's): y = min(max(0, x), z); gx = gy where 0 < x < z,
// else 0 (0 at both kinks, as Chainer).
struct ClippedRelu {
  template <typename T>
  CH_HOST_DEVICE T operator()(T x, T z) const {
    return x > T(0) ? (x < z ? x : z) : (x != x ? x : T(0));
  }
};
struct ClippedReluGrad {
  template <typename T>
  CH_HOST_DEVICE T operator()(T gy, T x, T z) const {
    return (x > T(0) && x < z) ? gy : T(0);
  }
};

}  // namespace chainerc::pointwise
