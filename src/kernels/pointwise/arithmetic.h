// Per-element math of the arithmetic functions (add, sub, mul, div, neg, the
// scalar forms, pow, exp, log) and of their gradients. One definition, built
// by the host compiler into the CPU backend and by nvcc into the CUDA kernels.
// Each functor is called with the element type T (float or double); the
// scalar forms take the scalar already converted to T.
#pragma once

#include <cmath>

#include "kernels/host_device.h"

namespace chainerc::pointwise {

struct Add {
  template <typename T>
  CH_HOST_DEVICE T operator()(T a, T b) const {
    return a + b;
  }
};
struct Sub {
  template <typename T>
  CH_HOST_DEVICE T operator()(T a, T b) const {
    return a - b;
  }
};
struct Mul {
  template <typename T>
  CH_HOST_DEVICE T operator()(T a, T b) const {
    return a * b;
  }
};
struct Div {
  template <typename T>
  CH_HOST_DEVICE T operator()(T a, T b) const {
    return a / b;
  }
};
// Div's gradient for b from gy * y (y = a / b): -gy * y / b.
struct DivGradB {
  template <typename T>
  CH_HOST_DEVICE T operator()(T gy_y, T b) const {
    return -gy_y / b;
  }
};
struct Neg {
  template <typename T>
  CH_HOST_DEVICE T operator()(T x) const {
    return -x;
  }
};

// x op s
struct AddScalar {
  template <typename T>
  CH_HOST_DEVICE T operator()(T x, T s) const {
    return x + s;
  }
};
struct SubScalar {
  template <typename T>
  CH_HOST_DEVICE T operator()(T x, T s) const {
    return x - s;
  }
};
struct RSubScalar {  // s - x
  template <typename T>
  CH_HOST_DEVICE T operator()(T x, T s) const {
    return s - x;
  }
};
struct MulScalar {
  template <typename T>
  CH_HOST_DEVICE T operator()(T x, T s) const {
    return x * s;
  }
};
struct DivScalar {
  template <typename T>
  CH_HOST_DEVICE T operator()(T x, T s) const {
    return x / s;
  }
};
struct RDivScalar {  // s / x
  template <typename T>
  CH_HOST_DEVICE T operator()(T x, T s) const {
    return s / x;
  }
};
// d(s / x)/dx * gy = -s * gy / x^2
struct RDivScalarGrad {
  template <typename T>
  CH_HOST_DEVICE T operator()(T gy, T x, T s) const {
    return -s * gy / (x * x);
  }
};
struct PowScalar {  // x ** p; p = 2 is a product (exact, and the common case)
  template <typename T>
  CH_HOST_DEVICE T operator()(T x, T p) const {
    return p == T(2) ? x * x : T(pow(x, p));
  }
};
// p * x^(p-1) * gy
struct PowScalarGrad {
  template <typename T>
  CH_HOST_DEVICE T operator()(T gy, T x, T p) const {
    return gy * (p == T(2) ? T(2) * x : p * T(pow(x, p - T(1))));
  }
};
struct RPowScalar {  // s ** x
  template <typename T>
  CH_HOST_DEVICE T operator()(T x, T s) const {
    return T(pow(s, x));
  }
};
// ln(s) * s^x * gy from y = s^x and log_s = ln(s)
struct RPowScalarGrad {
  template <typename T>
  CH_HOST_DEVICE T operator()(T gy, T y, T log_s) const {
    return gy * y * log_s;
  }
};
struct Exp {
  template <typename T>
  CH_HOST_DEVICE T operator()(T x) const {
    return exp(x);
  }
};
struct Log {
  template <typename T>
  CH_HOST_DEVICE T operator()(T x) const {
    return log(x);
  }
};
// x * x, and its gradient from x: 2 x gy (the kernels square and square_grad,
// declared in src/ops/manifest.py).
struct Square {
  template <typename T>
  CH_HOST_DEVICE T operator()(T x) const {
    return x * x;
  }
};
struct SquareGrad {
  template <typename T>
  CH_HOST_DEVICE T operator()(T gy, T x) const {
    return T(2) * x * gy;
  }
};
// max / min's gradient mask (Chainer 7's x == y): 1 where x equals the
// extremum y (broadcast to x's shape), else 0 (NaN never equals).
struct EqualMask {
  template <typename T>
  CH_HOST_DEVICE T operator()(T x, T y) const {
    return x == y ? T(1) : T(0);
  }
};
// exp's gradient from y: gy * y; log's from x: gy / x.
struct ExpGrad {
  template <typename T>
  CH_HOST_DEVICE T operator()(T gy, T y) const {
    return gy * y;
  }
};
struct LogGrad {
  template <typename T>
  CH_HOST_DEVICE T operator()(T gy, T x) const {
    return gy / x;
  }
};

}  // namespace chainerc::pointwise
