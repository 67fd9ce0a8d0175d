// Per-element math of the activation functions (relu, leaky_relu, sigmoid,
// tanh, prelu) and of the LSTM cell's gates, with their gradients. One
// definition, built by the host compiler into the CPU backend and by nvcc
// into the CUDA kernels. Called with the element type T (float or double);
// scalars (a slope) arrive already converted to T. The CPU backend computes
// sigmoid and tanh through glibc's vector math library; these functors stay
// their reference.
#pragma once

#include <cmath>

#include "kernels/host_device.h"

namespace chainerc::pointwise {

// max(0, x)
struct Relu {
  template <typename T>
  CH_HOST_DEVICE T operator()(T x) const {
    return x > 0 ? x : T(0);
  }
};
// relu's gradient from y: gy where y > 0 (exactly where x > 0), else 0.
struct ReluGrad {
  template <typename T>
  CH_HOST_DEVICE T operator()(T gy, T y) const {
    return y > 0 ? gy : T(0);
  }
};

// x where x >= 0, slope * x where x < 0. The product is computed
// unconditionally and then selected: a multiply under a condition may trap,
// so the compiler would keep a branch, while a select vectorizes.
struct LeakyRelu {
  template <typename T>
  CH_HOST_DEVICE T operator()(T x, T slope) const {
    const T scaled = x * slope;
    return x < 0 ? scaled : x;
  }
};
// leaky_relu's gradient from x: gy, times slope where x < 0.
struct LeakyReluGrad {
  template <typename T>
  CH_HOST_DEVICE T operator()(T gy, T x, T slope) const {
    const T scaled = gy * slope;
    return x < 0 ? scaled : gy;
  }
};

// PReLU for one element with its parameter a: x where x >= 0, a x where x < 0.
struct PRelu {
  template <typename T>
  CH_HOST_DEVICE T operator()(T x, T a) const {
    return x < 0 ? a * x : x;
  }
};
// PReLU's gradient for x: gy, times a where x < 0.
struct PReluGradX {
  template <typename T>
  CH_HOST_DEVICE T operator()(T gy, T x, T a) const {
    return x < 0 ? a * gy : gy;
  }
};
// PReLU's contribution of one element to the gradient of a: x gy where x < 0.
struct PReluGradA {
  template <typename T>
  CH_HOST_DEVICE T operator()(T gy, T x) const {
    return x < 0 ? x * gy : T(0);
  }
};

// 1 / (1 + exp(-x))
struct Sigmoid {
  template <typename T>
  CH_HOST_DEVICE T operator()(T x) const {
    return T(1) / (T(1) + exp(-x));
  }
};
// sigmoid's gradient from y: gy y (1 - y).
struct SigmoidGrad {
  template <typename T>
  CH_HOST_DEVICE T operator()(T gy, T y) const {
    return gy * y * (T(1) - y);
  }
};

struct Tanh {
  template <typename T>
  CH_HOST_DEVICE T operator()(T x) const {
    return tanh(x);
  }
};
// tanh's gradient from y: gy (1 - y^2).
struct TanhGrad {
  template <typename T>
  CH_HOST_DEVICE T operator()(T gy, T y) const {
    return gy * (T(1) - y * y);
  }
};

// The LSTM cell for one unit, given its activated gates a = tanh(x_a),
// i = sigmoid(x_i), f = sigmoid(x_f), o = sigmoid(x_o):
// the new cell state c = a i + f c_prev ...
struct LstmCell {
  template <typename T>
  CH_HOST_DEVICE T operator()(T a, T i, T f, T c_prev) const {
    return a * i + f * c_prev;
  }
};
// ... and the output h = o tanh(c), from tanh(c).
struct LstmOutput {
  template <typename T>
  CH_HOST_DEVICE T operator()(T o, T c_tanh) const {
    return o * c_tanh;
  }
};
// The LSTM cell's gradients for one unit from the activated gates, c_prev,
// tanh(c) and the gradients gc, gh of c and h: gc_prev and the gradients of
// the gates' pre-activations ga, gi, gf, go.
struct LstmGrad {
  template <typename T>
  CH_HOST_DEVICE void operator()(T a, T i, T f, T o, T c_prev, T c_tanh, T gc, T gh, T& gc_prev,
                                 T& ga, T& gi, T& gf, T& go) const {
    const T gct = gh * o * (T(1) - c_tanh * c_tanh) + gc;  // the total gradient of c
    gc_prev = gct * f;
    ga = gct * i * (T(1) - a * a);
    gi = gct * a * i * (T(1) - i);
    gf = gct * c_prev * f * (T(1) - f);
    go = gh * c_tanh * o * (T(1) - o);
  }
};

}  // namespace chainerc::pointwise
