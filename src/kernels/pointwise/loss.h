// Per-element math of the loss functions that the CPU backend and the CUDA
// kernels share (BinaryHierarchicalSoftmax's softplus and its gradient
// coefficient). Called with the element type T (float or double).
#pragma once

#include <cmath>

#include "kernels/host_device.h"

namespace chainerc::pointwise {

// log(1 + exp(z)) without overflow: max(z, 0) + log1p(exp(-|z|)).
struct Softplus {
  template <typename T>
  CH_HOST_DEVICE T operator()(T z) const {
    const T m = z > T(0) ? z : T(0);
    return m + log1p(exp(-fabs(z)));
  }
};

// The gradient coefficient of one path node of BinaryHierarchicalSoftmax:
// d/d(dot) of gloss * softplus(-code * dot) = -gloss * code / (1 + exp(code * dot)).
struct HsmGradCoeff {
  template <typename T>
  CH_HOST_DEVICE T operator()(T dot, T code, T gloss) const {
    return -gloss * code / (T(1) + exp(dot * code));
  }
};

}  // namespace chainerc::pointwise
