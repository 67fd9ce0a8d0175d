// Per-element math of issue 42's elementwise math functions (sqrt, rsqrt,
// absolute, erf, clip, maximum, minimum, where) and of their gradients, the
// kernels src/ops/manifest.py declares. Built by the host compiler into the
// CPU backend and by nvcc into the CUDA kernels; T is float or double.
#pragma once

#include <cmath>

#include "kernels/host_device.h"

namespace chainerc::pointwise {

#if !defined(__CUDACC__)
using std::erf;
using std::expm1;
#endif

// sqrt: y = sqrt(x); gx = gy / (2 y) from y.
struct Sqrt {
  template <typename T>
  CH_HOST_DEVICE T operator()(T x) const {
    return sqrt(x);
  }
};
struct SqrtGrad {
  template <typename T>
  CH_HOST_DEVICE T operator()(T gy, T y) const {
    return gy / (T(2) * y);
  }
};
// rsqrt: y = 1 / sqrt(x); gx = -gy y^3 / 2 from y.
struct Rsqrt {
  template <typename T>
  CH_HOST_DEVICE T operator()(T x) const {
    return T(1) / sqrt(x);
  }
};
struct RsqrtGrad {
  template <typename T>
  CH_HOST_DEVICE T operator()(T gy, T y) const {
    return T(-0.5) * gy * (y * y * y);
  }
};
// absolute: y = |x|; gx = sign(x) gy (0 at x = 0, as Chainer's numpy.sign).
struct Absolute {
  template <typename T>
  CH_HOST_DEVICE T operator()(T x) const {
    return fabs(x);
  }
};
struct AbsoluteGrad {
  template <typename T>
  CH_HOST_DEVICE T operator()(T gy, T x) const {
    return x > T(0) ? gy : (x < T(0) ? -gy : T(0));
  }
};
// erf: y = erf(x); gx = 2 / sqrt(pi) exp(-x^2) gy.
struct Erf {
  template <typename T>
  CH_HOST_DEVICE T operator()(T x) const {
    return erf(x);
  }
};
struct ErfGrad {
  template <typename T>
  CH_HOST_DEVICE T operator()(T gy, T x) const {
    return T(1.1283791670955126) * exp(-x * x) * gy;  // 2 / sqrt(pi)
  }
};
// clip's two bounds, one kernel each (a bound of +-infinity is no bound): a
// NaN stays NaN (numpy.clip); the gradient passes where x_min <= x <= x_max
// (Chainer's ClipGrad: 1 at the bounds).
struct ClipLower {  // max(x, s)
  template <typename T>
  CH_HOST_DEVICE T operator()(T x, T s) const {
    return x < s ? s : x;
  }
};
struct ClipUpper {  // min(x, s)
  template <typename T>
  CH_HOST_DEVICE T operator()(T x, T s) const {
    return x > s ? s : x;
  }
};
struct ClipGradLower {  // gy where x >= s
  template <typename T>
  CH_HOST_DEVICE T operator()(T gy, T x, T s) const {
    return x >= s ? gy : T(0);
  }
};
struct ClipGradUpper {  // gy where x <= s
  template <typename T>
  CH_HOST_DEVICE T operator()(T gy, T x, T s) const {
    return x <= s ? gy : T(0);
  }
};
// maximum / minimum (NumPy's: a NaN operand gives NaN) and the masks that
// route their gradients, as Chainer 7 does: to a where a >= b (maximum),
// where a <= b (minimum), so a tie goes to a; to b elsewhere.
struct Maximum {
  template <typename T>
  CH_HOST_DEVICE T operator()(T a, T b) const {
    return (a >= b || a != a) ? a : b;
  }
};
struct Minimum {
  template <typename T>
  CH_HOST_DEVICE T operator()(T a, T b) const {
    return (a <= b || a != a) ? a : b;
  }
};
struct GreaterEqualMask {
  template <typename T>
  CH_HOST_DEVICE T operator()(T a, T b) const {
    return a >= b ? T(1) : T(0);
  }
};
struct LessEqualMask {
  template <typename T>
  CH_HOST_DEVICE T operator()(T a, T b) const {
    return a <= b ? T(1) : T(0);
  }
};
// 1 where x is nonzero (where's condition as a mask), else 0.
struct NonzeroMask {
  template <typename T>
  CH_HOST_DEVICE T operator()(T x) const {
    return x != T(0) ? T(1) : T(0);
  }
};
// x where the mask m is nonzero, else 0; and the complement. Exact (no
// product: an infinite or NaN x where the mask excludes it gives 0).
struct MaskSelect {
  template <typename T>
  CH_HOST_DEVICE T operator()(T x, T m) const {
    return m != T(0) ? x : T(0);
  }
};
struct MaskSelectNot {
  template <typename T>
  CH_HOST_DEVICE T operator()(T x, T m) const {
    return m != T(0) ? T(0) : x;
  }
};

}  // namespace chainerc::pointwise
