// Per-element math of the optimizers (chainer.optimizers' update rules, in
// Chainer 1.0.1's formulas, and Chainer 7's AdamW / AMSGrad and NesterovAG) and of the gradient
// utilities of the Optimizer base class. One definition, built by the host compiler into the CPU
// backend and by nvcc into the CUDA kernels.
//
// Each update rule is a functor template on the element type T (float or
// double), made from its hyperparameters for one step (plain doubles, the
// structs the kernels of kernels/optimizers.h take) converted once to T, and
// called per element with the parameter, its gradient and its state elements,
// which it updates in place: rule(p, g, state...).
#pragma once

#include "kernels/host_device.h"

namespace chainerc::pointwise {

// ---- hyperparameters of one update step ----------------------------------------

struct SgdHyper {
  double lr;
};
struct MomentumSgdHyper {
  double lr, momentum;
};
struct AdaGradHyper {
  double lr, eps;
};
struct AdaDeltaHyper {
  double rho, eps;
};
// Adam's values for step t: lr = alpha * sqrt(1 - beta2^t) / (1 - beta1^t)
// and beta1 = beta1 * lam^(t-1) (Chainer's decay of the first moment rate).
struct AdamHyper {
  double lr, beta1, beta2, eps;
};
// Chainer 7's Adam with decoupled weight decay (AdamW) and the step scale eta:
// lr, beta1, beta2 and eps as AdamHyper.
struct AdamWHyper {
  double lr, beta1, beta2, eps, eta, weight_decay_rate;
};
struct RmspropHyper {
  double lr, alpha, eps;
};
struct NesterovAgHyper {
  double lr, momentum;
};

// ---- update rules ----------------------------------------------------------------

// p -= lr * g
template <typename T>
struct SgdRule {
  T lr;
  CH_HOST_DEVICE explicit SgdRule(const SgdHyper& h) : lr(static_cast<T>(h.lr)) {}
  CH_HOST_DEVICE void operator()(T& p, T g) const { p -= lr * g; }
};

// v = momentum * v - lr * g; p += v
template <typename T>
struct MomentumSgdRule {
  T lr, momentum;
  CH_HOST_DEVICE explicit MomentumSgdRule(const MomentumSgdHyper& h)
      : lr(static_cast<T>(h.lr)), momentum(static_cast<T>(h.momentum)) {}
  CH_HOST_DEVICE void operator()(T& p, T g, T& v) const {
    T vi = momentum * v - lr * g;
    v = vi;
    p += vi;
  }
};

// h += g^2; p -= lr * g / (sqrt(h) + eps)
template <typename T>
struct AdaGradRule {
  T lr, eps;
  CH_HOST_DEVICE explicit AdaGradRule(const AdaGradHyper& h)
      : lr(static_cast<T>(h.lr)), eps(static_cast<T>(h.eps)) {}
  CH_HOST_DEVICE void operator()(T& p, T g, T& h) const {
    T hi = h + g * g;
    h = hi;
    p -= lr * g / (sqrt(hi) + eps);
  }
};

// msg = rho * msg + (1 - rho) * g^2; dx = sqrt((msdx + eps) / (msg + eps)) * g;
// msdx = rho * msdx + (1 - rho) * dx^2; p -= dx
template <typename T>
struct AdaDeltaRule {
  T rho, one_minus_rho, eps;
  CH_HOST_DEVICE explicit AdaDeltaRule(const AdaDeltaHyper& h)
      : rho(static_cast<T>(h.rho)),
        one_minus_rho(static_cast<T>(1 - h.rho)),
        eps(static_cast<T>(h.eps)) {}
  CH_HOST_DEVICE void operator()(T& p, T g, T& msg, T& msdx) const {
    T m = rho * msg + one_minus_rho * g * g;
    msg = m;
    T dx = sqrt((msdx + eps) / (m + eps)) * g;
    msdx = rho * msdx + one_minus_rho * dx * dx;
    p -= dx;
  }
};

// m += (1 - beta1) * (g - m); v += (1 - beta2) * (g^2 - v);
// p -= lr * m / (sqrt(v) + eps)
template <typename T>
struct AdamRule {
  T a1, a2, lr, eps;
  CH_HOST_DEVICE explicit AdamRule(const AdamHyper& h)
      : a1(static_cast<T>(1 - h.beta1)),
        a2(static_cast<T>(1 - h.beta2)),
        lr(static_cast<T>(h.lr)),
        eps(static_cast<T>(h.eps)) {}
  CH_HOST_DEVICE void operator()(T& p, T g, T& m, T& v) const {
    T mi = m + a1 * (g - m);
    T vi = v + a2 * (g * g - v);
    m = mi;
    v = vi;
    p -= lr * mi / (sqrt(vi) + eps);
  }
};

// Chainer 7's AdamRule (amsgrad off): m and v as AdamRule;
// p = (1 - eta * weight_decay_rate) * p - eta * (lr / (sqrt(v) + eps)) * m,
// in Chainer 7's order of operations.
template <typename T>
struct AdamWRule {
  T a1, a2, lr, eps, eta, keep;
  CH_HOST_DEVICE explicit AdamWRule(const AdamWHyper& h)
      : a1(static_cast<T>(1 - h.beta1)),
        a2(static_cast<T>(1 - h.beta2)),
        lr(static_cast<T>(h.lr)),
        eps(static_cast<T>(h.eps)),
        eta(static_cast<T>(h.eta)),
        keep(static_cast<T>(1 - h.eta * h.weight_decay_rate)) {}
  CH_HOST_DEVICE T step(T p, T m, T denom) const { return keep * p - eta * (lr / denom * m); }
  CH_HOST_DEVICE void operator()(T& p, T g, T& m, T& v) const {
    T mi = m + a1 * (g - m);
    T vi = v + a2 * (g * g - v);
    m = mi;
    v = vi;
    p = step(p, mi, sqrt(vi) + eps);
  }
};

// Chainer 7's AdamRule with amsgrad: as AdamWRule, the step divided by the
// running maximum vhat = max(vhat, v) instead of v.
template <typename T>
struct AmsgradRule {
  AdamWRule<T> adam;
  CH_HOST_DEVICE explicit AmsgradRule(const AdamWHyper& h) : adam(h) {}
  CH_HOST_DEVICE void operator()(T& p, T g, T& m, T& v, T& vhat) const {
    T mi = m + adam.a1 * (g - m);
    T vi = v + adam.a2 * (g * g - v);
    T hi = vhat > vi ? vhat : vi;
    m = mi;
    v = vi;
    vhat = hi;
    p = adam.step(p, mi, sqrt(hi) + adam.eps);
  }
};

// Chainer 7's NesterovAG: v = momentum * v - lr * g;
// p += momentum^2 * v - (1 + momentum) * lr * g
template <typename T>
struct NesterovAgRule {
  T lr, momentum;
  CH_HOST_DEVICE explicit NesterovAgRule(const NesterovAgHyper& h)
      : lr(static_cast<T>(h.lr)), momentum(static_cast<T>(h.momentum)) {}
  CH_HOST_DEVICE void operator()(T& p, T g, T& v) const {
    T vi = momentum * v - lr * g;
    v = vi;
    p += momentum * momentum * vi;
    p -= (1 + momentum) * lr * g;
  }
};

// ms = alpha * ms + (1 - alpha) * g^2; p -= lr * g / (sqrt(ms) + eps)
template <typename T>
struct RmspropRule {
  T lr, alpha, one_minus_alpha, eps;
  CH_HOST_DEVICE explicit RmspropRule(const RmspropHyper& h)
      : lr(static_cast<T>(h.lr)),
        alpha(static_cast<T>(h.alpha)),
        one_minus_alpha(static_cast<T>(1 - h.alpha)),
        eps(static_cast<T>(h.eps)) {}
  CH_HOST_DEVICE void operator()(T& p, T g, T& ms) const {
    T msi = alpha * ms + one_minus_alpha * g * g;
    ms = msi;
    p -= lr * g / (sqrt(msi) + eps);
  }
};

// ---- gradient utilities ------------------------------------------------------------

// x *= s (clip_grads, s converted to T)
struct ScaleInPlace {
  template <typename T>
  CH_HOST_DEVICE void operator()(T& x, T s) const {
    x *= s;
  }
};
// y += s * x (weight_decay: g += decay * p, s converted to T)
struct AddScaledInPlace {
  template <typename T>
  CH_HOST_DEVICE void operator()(T& y, T x, T s) const {
    y += s * x;
  }
};
// x^2 in double (a term of the squared L2 norm)
struct SquareAsDouble {
  template <typename T>
  CH_HOST_DEVICE double operator()(T x) const {
    return static_cast<double>(x) * static_cast<double>(x);
  }
};

}  // namespace chainerc::pointwise
