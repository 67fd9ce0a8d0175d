// chainerc's C++ API: the built-in functions: the operators,
// ch::exp, ..., and ch::F (over <ch/functions.h>).
// Part of <ch/ch.hpp>, which says what the C++ layer adds, how exceptions and
// callbacks behave and the threading contract; header-only.
#ifndef CH_FUNCTIONS_HPP
#define CH_FUNCTIONS_HPP

#include <ch/variable.hpp>

namespace ch {
// ===========================================================================================
// Built-in functions
// ===========================================================================================

namespace detail {
using UnaryFn = ch_status (*)(ch_variable**, ch_variable*);
using BinaryFn = ch_status (*)(ch_variable**, ch_variable*, ch_variable*);
using ScalarFn = ch_status (*)(ch_variable**, ch_variable*, double);

inline Variable call(UnaryFn f, const Variable& x) {
  ch_variable* out = nullptr;
  check(f(&out, x.get()));
  return Variable::adopt(out);
}
inline Variable call(BinaryFn f, const Variable& a, const Variable& b) {
  ch_variable* out = nullptr;
  check(f(&out, a.get(), b.get()));
  return Variable::adopt(out);
}
inline Variable call(ScalarFn f, const Variable& x, double s) {
  ch_variable* out = nullptr;
  check(f(&out, x.get(), s));
  return Variable::adopt(out);
}
}  // namespace detail

/// Elementwise arithmetic with NumPy broadcasting; scalars take the variable's dtype.
inline Variable operator+(const Variable& a, const Variable& b) {
  return detail::call(ch_functions_add, a, b);
}
inline Variable operator-(const Variable& a, const Variable& b) {
  return detail::call(ch_functions_sub, a, b);
}
inline Variable operator*(const Variable& a, const Variable& b) {
  return detail::call(ch_functions_mul, a, b);
}
inline Variable operator/(const Variable& a, const Variable& b) {
  return detail::call(ch_functions_div, a, b);
}
inline Variable operator+(const Variable& x, double s) {
  return detail::call(ch_functions_add_scalar, x, s);
}
inline Variable operator+(double s, const Variable& x) {
  return detail::call(ch_functions_add_scalar, x, s);
}
inline Variable operator-(const Variable& x, double s) {
  return detail::call(ch_functions_sub_scalar, x, s);
}
inline Variable operator-(double s, const Variable& x) {
  return detail::call(ch_functions_rsub_scalar, x, s);
}
inline Variable operator*(const Variable& x, double s) {
  return detail::call(ch_functions_mul_scalar, x, s);
}
inline Variable operator*(double s, const Variable& x) {
  return detail::call(ch_functions_mul_scalar, x, s);
}
inline Variable operator/(const Variable& x, double s) {
  return detail::call(ch_functions_div_scalar, x, s);
}
inline Variable operator/(double s, const Variable& x) {
  return detail::call(ch_functions_rdiv_scalar, x, s);
}
/// -x
inline Variable operator-(const Variable& x) { return detail::call(ch_functions_neg, x); }

/// Named forms of the operators.
inline Variable add(const Variable& a, const Variable& b) { return a + b; }
inline Variable sub(const Variable& a, const Variable& b) { return a - b; }
inline Variable mul(const Variable& a, const Variable& b) { return a * b; }
inline Variable div(const Variable& a, const Variable& b) { return a / b; }
inline Variable neg(const Variable& x) { return -x; }

/// x ** p for a scalar exponent.
inline Variable pow(const Variable& x, double p) {
  return detail::call(ch_functions_pow_scalar, x, p);
}
/// s ** x for a scalar base s > 0.
inline Variable pow(double s, const Variable& x) {
  return detail::call(ch_functions_rpow_scalar, x, s);
}
// BEGIN GENERATED functions (scripts/gen_functions.py; edit src/ops/manifest.py)
/// Elementwise e ** x.
inline Variable exp(const Variable& x) {
  ch_variable* out = nullptr;
  check(ch_functions_exp(&out, x.get()));
  return Variable::adopt(out);
}
/// Elementwise natural logarithm.
inline Variable log(const Variable& x) {
  ch_variable* out = nullptr;
  check(ch_functions_log(&out, x.get()));
  return Variable::adopt(out);
}
/// Elementwise square x * x (gradient 2 x gy).
inline Variable square(const Variable& x) {
  ch_variable* out = nullptr;
  check(ch_functions_square(&out, x.get()));
  return Variable::adopt(out);
}
/// Elementwise square root (NaN below 0; gradient gy / (2 y)).
inline Variable sqrt(const Variable& x) {
  ch_variable* out = nullptr;
  check(ch_functions_sqrt(&out, x.get()));
  return Variable::adopt(out);
}
/// Elementwise reciprocal square root 1 / sqrt(x) (gradient -gy y^3 / 2).
inline Variable rsqrt(const Variable& x) {
  ch_variable* out = nullptr;
  check(ch_functions_rsqrt(&out, x.get()));
  return Variable::adopt(out);
}
/// Elementwise absolute value |x| (gradient sign(x) gy, 0 at x = 0).
inline Variable absolute(const Variable& x) {
  ch_variable* out = nullptr;
  check(ch_functions_absolute(&out, x.get()));
  return Variable::adopt(out);
}
/// Elementwise error function erf(x) (gradient 2 / sqrt(pi) exp(-x^2) gy).
inline Variable erf(const Variable& x) {
  ch_variable* out = nullptr;
  check(ch_functions_erf(&out, x.get()));
  return Variable::adopt(out);
}
/// x limited to [x_min, x_max] (gradient gy where x_min <= x <= x_max).
inline Variable clip(const Variable& x, double x_min, double x_max) {
  ch_variable* out = nullptr;
  check(ch_functions_clip(&out, x.get(), x_min, x_max));
  return Variable::adopt(out);
}
/// Elementwise maximum of a and b with NumPy broadcasting.
inline Variable maximum(const Variable& a, const Variable& b) {
  ch_variable* out = nullptr;
  check(ch_functions_maximum(&out, a.get(), b.get()));
  return Variable::adopt(out);
}
/// Elementwise minimum of a and b with NumPy broadcasting.
inline Variable minimum(const Variable& a, const Variable& b) {
  ch_variable* out = nullptr;
  check(ch_functions_minimum(&out, a.get(), b.get()));
  return Variable::adopt(out);
}
/// Sum of all elements: a 0-d variable.
inline Variable sum(const Variable& x) {
  ch_variable* out = nullptr;
  check(ch_functions_sum(&out, x.get()));
  return Variable::adopt(out);
}
/// Sum along `axis` (negative counts from the end); keepdims keeps it as 1.
inline Variable sum(const Variable& x, int32_t axis, bool keepdims = false) {
  ch_variable* out = nullptr;
  check(ch_functions_sum_axis(&out, x.get(), axis, keepdims ? 1 : 0));
  return Variable::adopt(out);
}
/// Sum over a set of axes (naxes 0: all); keepdims keeps them with extent 1.
inline Variable sum_axes(const Variable& x, const std::vector<int32_t>& axes,
                         bool keepdims = false) {
  ch_variable* out = nullptr;
  check(ch_functions_sum_axes(&out, x.get(), axes.data(), static_cast<int32_t>(axes.size()),
                              keepdims ? 1 : 0));
  return Variable::adopt(out);
}
/// Mean over a set of axes (naxes 0: all); keepdims keeps them with extent 1.
inline Variable mean(const Variable& x, const std::vector<int32_t>& axes, bool keepdims = false) {
  ch_variable* out = nullptr;
  check(ch_functions_mean(&out, x.get(), axes.data(), static_cast<int32_t>(axes.size()),
                          keepdims ? 1 : 0));
  return Variable::adopt(out);
}
/// Weighted average sum(x w) / sum(w) over all axes or one axis.
inline Variable average(const Variable& x, const std::vector<int32_t>& axes,
                        const Variable& weights, bool keepdims = false) {
  ch_variable* out = nullptr;
  check(ch_functions_average(&out, x.get(), axes.data(), static_cast<int32_t>(axes.size()),
                             weights.get(), keepdims ? 1 : 0));
  return Variable::adopt(out);
}
/// Same data, another shape of the same size (one extent may be -1).
inline Variable reshape(const Variable& x, const Shape& shape) {
  ch_variable* out = nullptr;
  check(ch_functions_reshape(&out, x.get(), shape.data(), detail::shape_ndim(shape)));
  return Variable::adopt(out);
}
/// Returns its input; gradient passes through.
inline Variable identity(const Variable& x) {
  ch_variable* out = nullptr;
  check(ch_functions_identity(&out, x.get()));
  return Variable::adopt(out);
}
/// Broadcast to `shape` by NumPy's rules.
inline Variable broadcast_to(const Variable& x, const Shape& shape) {
  ch_variable* out = nullptr;
  check(ch_functions_broadcast_to(&out, x.get(), shape.data(), detail::shape_ndim(shape)));
  return Variable::adopt(out);
}
// END GENERATED functions

/// x where `condition` is nonzero, else y, with NumPy broadcasting (Chainer's where; the
/// condition an int32 or float Array, not differentiated).
inline Variable where(const Array& condition, const Variable& x, const Variable& y) {
  ch_variable* out = nullptr;
  check(ch_functions_where(&out, condition.get(), x.get(), y.get()));
  return Variable::adopt(out);
}

// ===========================================================================================
// Neural networks: ch::F (Chainer's chainer.functions) and ch::config
// ===========================================================================================

/// Chainer's `F.`: the built-in neural-network functions as free functions over Variables,
/// and the parameterized ones (Linear, Convolution2D, ...) as factories of function objects
/// applied with their call operator:
///
///   ch::Function l1 = ch::F::Linear(784, 100), l2 = ch::F::Linear(100, 10);
///   ch::Variable y = l2(ch::F::relu(l1(x)));
///   ch::Variable loss = ch::F::softmax_cross_entropy(y, t);
///
/// Defaults are the seed's (Chainer 1.0.1). Parameterized functions hold float32 parameters
/// unless a dtype is given (last argument). Errors throw ch::Error with the library's message.
namespace F {

/// A pair of extents (height, width): from one int (both) or two ({kh, kw}, a std::pair).
struct Int2 {
  int64_t h = 0, w = 0;
  Int2(int64_t both) noexcept : h(both), w(both) {}  // NOLINT: implicit on purpose
  Int2(int64_t h_, int64_t w_) noexcept : h(h_), w(w_) {}
  template <class A, class B>
  Int2(const std::pair<A, B>& p) noexcept  // NOLINT: implicit on purpose
      : h(static_cast<int64_t>(p.first)), w(static_cast<int64_t>(p.second)) {}
};

// The plain functions (activation, math, loss, evaluation, noise, normalization).
// BEGIN GENERATED F (scripts/gen_functions.py; edit src/ops/manifest.py)
/// Maximum over a set of axes (naxes 0: all); the gradient goes to every maximum.
inline Variable max(const Variable& x, const std::vector<int32_t>& axes, bool keepdims = false) {
  ch_variable* out = nullptr;
  check(ch_functions_max(&out, x.get(), axes.data(), static_cast<int32_t>(axes.size()),
                         keepdims ? 1 : 0));
  return Variable::adopt(out);
}
/// Minimum over a set of axes (naxes 0: all); the gradient goes to every minimum.
inline Variable min(const Variable& x, const std::vector<int32_t>& axes, bool keepdims = false) {
  ch_variable* out = nullptr;
  check(ch_functions_min(&out, x.get(), axes.data(), static_cast<int32_t>(axes.size()),
                         keepdims ? 1 : 0));
  return Variable::adopt(out);
}
/// int32 index of the first maximum over all elements or one axis.
inline Variable argmax(const Variable& x, const std::vector<int32_t>& axes) {
  ch_variable* out = nullptr;
  check(ch_functions_argmax(&out, x.get(), axes.data(), static_cast<int32_t>(axes.size())));
  return Variable::adopt(out);
}
/// int32 index of the first minimum over all elements or one axis.
inline Variable argmin(const Variable& x, const std::vector<int32_t>& axes) {
  ch_variable* out = nullptr;
  check(ch_functions_argmin(&out, x.get(), axes.data(), static_cast<int32_t>(axes.size())));
  return Variable::adopt(out);
}
/// log(sum(exp(x))) over a set of axes (naxes 0: all), computed stably.
inline Variable logsumexp(const Variable& x, const std::vector<int32_t>& axes) {
  ch_variable* out = nullptr;
  check(ch_functions_logsumexp(&out, x.get(), axes.data(), static_cast<int32_t>(axes.size())));
  return Variable::adopt(out);
}
/// Cumulative sum along one axis, or of the flattened x (naxes 0).
inline Variable cumsum(const Variable& x, const std::vector<int32_t>& axes) {
  ch_variable* out = nullptr;
  check(ch_functions_cumsum(&out, x.get(), axes.data(), static_cast<int32_t>(axes.size())));
  return Variable::adopt(out);
}
/// Matrix product op(a) op(b) by NumPy's matmul rules (Chainer 7's matmul).
inline Variable matmul(const Variable& a, const Variable& b, bool transa = false,
                       bool transb = false) {
  ch_variable* out = nullptr;
  check(ch_functions_matmul(&out, a.get(), b.get(), transa ? 1 : 0, transb ? 1 : 0));
  return Variable::adopt(out);
}
/// Batched matrix product.
inline Variable batch_matmul(const Variable& a, const Variable& b, bool transa = false,
                             bool transb = false) {
  ch_variable* out = nullptr;
  check(ch_functions_batch_matmul(&out, a.get(), b.get(), transa ? 1 : 0, transb ? 1 : 0));
  return Variable::adopt(out);
}
/// Copy to the device `dst`; the gradient is copied back.
inline Variable copy(const Variable& x, ch_device dst) {
  ch_variable* out = nullptr;
  check(ch_functions_copy(&out, x.get(), dst));
  return Variable::adopt(out);
}
/// x with a new axis of extent 1 at `axis` (negative counts from the end).
inline Variable expand_dims(const Variable& x, int32_t axis) {
  ch_variable* out = nullptr;
  check(ch_functions_expand_dims(&out, x.get(), axis));
  return Variable::adopt(out);
}
/// x as a 1-d array of its size.
inline Variable flatten(const Variable& x) {
  ch_variable* out = nullptr;
  check(ch_functions_flatten(&out, x.get()));
  return Variable::adopt(out);
}
/// x with axes axis1 and axis2 interchanged (a transpose).
inline Variable swapaxes(const Variable& x, int32_t axis1, int32_t axis2) {
  ch_variable* out = nullptr;
  check(ch_functions_swapaxes(&out, x.get(), axis1, axis2));
  return Variable::adopt(out);
}
/// x reversed along `axis`; the gradient is gy reversed.
inline Variable flip(const Variable& x, int32_t axis) {
  ch_variable* out = nullptr;
  check(ch_functions_flip(&out, x.get(), axis));
  return Variable::adopt(out);
}
/// x converted to `dtype` (Chainer's `type`); the gradient is cast back.
inline Variable cast(const Variable& x, ch_dtype dtype) {
  ch_variable* out = nullptr;
  check(ch_functions_cast(&out, x.get(), dtype));
  return Variable::adopt(out);
}
/// y[i] = x[i, t[i]] for x (B, N) and int32 labels t (B,).
inline Variable select_item(const Variable& x, const Variable& t) {
  ch_variable* out = nullptr;
  check(ch_functions_select_item(&out, x.get(), t.get()));
  return Variable::adopt(out);
}
/// Rectified linear unit max(0, x).
inline Variable relu(const Variable& x) {
  ch_variable* out = nullptr;
  check(ch_functions_relu(&out, x.get()));
  return Variable::adopt(out);
}
/// Leaky ReLU: x for x >= 0, slope * x for x < 0.
inline Variable leaky_relu(const Variable& x, double slope = 0.2) {
  ch_variable* out = nullptr;
  check(ch_functions_leaky_relu(&out, x.get(), slope));
  return Variable::adopt(out);
}
/// Logistic sigmoid 1 / (1 + exp(-x)).
inline Variable sigmoid(const Variable& x) {
  ch_variable* out = nullptr;
  check(ch_functions_sigmoid(&out, x.get()));
  return Variable::adopt(out);
}
/// Hyperbolic tangent.
inline Variable tanh(const Variable& x) {
  ch_variable* out = nullptr;
  check(ch_functions_tanh(&out, x.get()));
  return Variable::adopt(out);
}
/// GELU x Phi(x) = x (1 + erf(x / sqrt 2)) / 2 (PyTorch's exact form).
inline Variable gelu(const Variable& x) {
  ch_variable* out = nullptr;
  check(ch_functions_gelu(&out, x.get()));
  return Variable::adopt(out);
}
/// GELU's tanh approximation (PyTorch's gelu with approximate='tanh').
inline Variable gelu_tanh(const Variable& x) {
  ch_variable* out = nullptr;
  check(ch_functions_gelu_tanh(&out, x.get()));
  return Variable::adopt(out);
}
/// SiLU x sigmoid(x) (PyTorch's silu; Chainer's swish with beta = 1).
inline Variable silu(const Variable& x) {
  ch_variable* out = nullptr;
  check(ch_functions_silu(&out, x.get()));
  return Variable::adopt(out);
}
/// Softplus log(1 + exp(beta x)) / beta (gradient gy sigmoid(beta x)).
inline Variable softplus(const Variable& x, double beta = 1.0) {
  ch_variable* out = nullptr;
  check(ch_functions_softplus(&out, x.get(), beta));
  return Variable::adopt(out);
}
/// ELU: x for x > 0, alpha (exp(x) - 1) for x <= 0.
inline Variable elu(const Variable& x, double alpha = 1.0) {
  ch_variable* out = nullptr;
  check(ch_functions_elu(&out, x.get(), alpha));
  return Variable::adopt(out);
}
/// Clipped ReLU min(max(0, x), z).
inline Variable clipped_relu(const Variable& x, double z = 20.0) {
  ch_variable* out = nullptr;
  check(ch_functions_clipped_relu(&out, x.get(), z));
  return Variable::adopt(out);
}
/// Swish x sigmoid(beta x), beta broadcast along axis 1 (Chainer's swish).
inline Variable swish(const Variable& x, const Variable& beta) {
  ch_variable* out = nullptr;
  check(ch_functions_swish(&out, x.get(), beta.get()));
  return Variable::adopt(out);
}
/// Softmax along axis 1.
inline Variable softmax(const Variable& x) {
  ch_variable* out = nullptr;
  check(ch_functions_softmax(&out, x.get()));
  return Variable::adopt(out);
}
/// Softmax along any axis (Chainer 7's softmax(x, axis=1)).
inline Variable softmax_axis(const Variable& x, int32_t axis = 1) {
  ch_variable* out = nullptr;
  check(ch_functions_softmax_axis(&out, x.get(), axis));
  return Variable::adopt(out);
}
/// log(softmax(x)) along any axis, computed stably (x - logsumexp).
inline Variable log_softmax(const Variable& x, int32_t axis = 1) {
  ch_variable* out = nullptr;
  check(ch_functions_log_softmax(&out, x.get(), axis));
  return Variable::adopt(out);
}
/// Linear function y = x W^T + b of variables x, W (out, in) and b (out,).
inline Variable linear(const Variable& x, const Variable& W, const Variable& b,
                       int32_t n_batch_axes = 1) {
  ch_variable* out = nullptr;
  check(ch_functions_linear(&out, x.get(), W.get(), b.get(), n_batch_axes));
  return Variable::adopt(out);
}
/// Linear function y = x W^T without bias (Chainer's b=None).
inline Variable linear(const Variable& x, const Variable& W, int32_t n_batch_axes = 1) {
  ch_variable* out = nullptr;
  check(ch_functions_linear_nobias(&out, x.get(), W.get(), n_batch_axes));
  return Variable::adopt(out);
}
/// Mean cross entropy of softmax(x) against int32 labels t.
inline Variable softmax_cross_entropy(const Variable& x, const Variable& t) {
  ch_variable* out = nullptr;
  check(ch_functions_softmax_cross_entropy(&out, x.get(), t.get()));
  return Variable::adopt(out);
}
/// Mean squared error over all elements.
inline Variable mean_squared_error(const Variable& x0, const Variable& x1) {
  ch_variable* out = nullptr;
  check(ch_functions_mean_squared_error(&out, x0.get(), x1.get()));
  return Variable::adopt(out);
}
/// Classification accuracy (not differentiable).
inline Variable accuracy(const Variable& y, const Variable& t) {
  ch_variable* out = nullptr;
  check(ch_functions_accuracy(&out, y.get(), t.get()));
  return Variable::adopt(out);
}
/// Dropout: zero elements with probability ratio, scale the rest by 1/(1-ratio).
inline Variable dropout(const Variable& x, double ratio = 0.5, int32_t train = CH_MODE_DEFAULT) {
  ch_variable* out = nullptr;
  check(ch_functions_dropout(&out, x.get(), ratio, train));
  return Variable::adopt(out);
}
/// Local response normalization across channels.
inline Variable local_response_normalization(const Variable& x, int32_t n = 5, double k = 2.0,
                                             double alpha = 0.0001, double beta = 0.75) {
  ch_variable* out = nullptr;
  check(ch_functions_local_response_normalization(&out, x.get(), n, k, alpha, beta));
  return Variable::adopt(out);
}
/// Layer normalization of each row over the last axis, scaled by gamma, shifted by beta.
inline Variable layer_normalization(const Variable& x, const Variable& gamma, const Variable& beta,
                                    double eps = 1e-05) {
  ch_variable* out = nullptr;
  check(ch_functions_layer_normalization(&out, x.get(), gamma.get(), beta.get(), eps));
  return Variable::adopt(out);
}
/// RMS normalization over the last axis: x / sqrt(mean(x^2) + eps) * gamma.
inline Variable rms_normalization(const Variable& x, const Variable& gamma, double eps) {
  ch_variable* out = nullptr;
  check(ch_functions_rms_normalization(&out, x.get(), gamma.get(), eps));
  return Variable::adopt(out);
}
/// Group normalization: statistics per sample and group of channels.
inline Variable group_normalization(const Variable& x, int32_t groups, const Variable& gamma,
                                    const Variable& beta, double eps = 1e-05) {
  ch_variable* out = nullptr;
  check(ch_functions_group_normalization(&out, x.get(), groups, gamma.get(), beta.get(), eps));
  return Variable::adopt(out);
}
// END GENERATED F

// ---- activation

/// LSTM activation: returns (c, h) from the previous cell state c_prev (N, U) and the
/// signal x (N, 4U), gates interleaved as Chainer 1.0.1.
inline std::pair<Variable, Variable> lstm(const Variable& c_prev, const Variable& x) {
  ch_variable* c = nullptr;
  ch_variable* h = nullptr;
  ch_status st = ch_functions_lstm(&c, &h, c_prev.get(), x.get());
  std::pair<Variable, Variable> out(Variable::adopt(c), Variable::adopt(h));
  check(st);
  return out;
}

// ---- array

/// Permute the axes (output axis i = input axis axes[i]); no axes reverses them.
inline Variable transpose(const Variable& x, const std::vector<int32_t>& axes = {}) {
  ch_variable* out = nullptr;
  check(ch_functions_transpose(&out, x.get(), axes.empty() ? nullptr : axes.data(),
                               static_cast<int32_t>(axes.size())));
  return Variable::adopt(out);
}
/// Concatenate along `axis` (default 1).
inline Variable concat(const std::vector<Variable>& xs, int32_t axis = 1) {
  std::vector<ch_variable*> hs;
  hs.reserve(xs.size());
  for (const Variable& v : xs) hs.push_back(v.get());
  ch_variable* out = nullptr;
  check(ch_functions_concat(&out, hs.data(), hs.size(), axis));
  return Variable::adopt(out);
}
/// Join variables of one shape along a new axis `axis` (Chainer 7's stack).
inline Variable stack(const std::vector<Variable>& xs, int32_t axis = 0) {
  std::vector<ch_variable*> hs;
  hs.reserve(xs.size());
  for (const Variable& v : xs) hs.push_back(v.get());
  ch_variable* out = nullptr;
  check(ch_functions_stack(&out, hs.data(), hs.size(), axis));
  return Variable::adopt(out);
}
/// x cut along `axis` into `sections` equal pieces (Chainer 7's split_axis).
inline std::vector<Variable> split_axis(const Variable& x, int32_t sections, int32_t axis) {
  std::vector<ch_variable*> hs(sections > 0 ? static_cast<size_t>(sections) : 0);
  check(ch_functions_split_axis(hs.data(), hs.size(), x.get(), nullptr, 0, sections, axis));
  std::vector<Variable> out;
  for (ch_variable* h : hs) out.push_back(Variable::adopt(h));
  return out;
}
/// x cut along `axis` at the sorted positions `indices` (indices.size() + 1 pieces).
inline std::vector<Variable> split_axis(const Variable& x, const std::vector<int64_t>& indices,
                                        int32_t axis) {
  std::vector<ch_variable*> hs(indices.size() + 1);
  check(ch_functions_split_axis(hs.data(), hs.size(), x.get(), indices.data(),
                                static_cast<int32_t>(indices.size()), 0, axis));
  std::vector<Variable> out;
  for (ch_variable* h : hs) out.push_back(Variable::adopt(h));
  return out;
}
/// x without axes of extent 1: all of them (axes empty) or the listed ones.
inline Variable squeeze(const Variable& x, const std::vector<int32_t>& axes = {}) {
  ch_variable* out = nullptr;
  check(ch_functions_squeeze(&out, x.get(), axes.empty() ? nullptr : axes.data(),
                             static_cast<int32_t>(axes.size())));
  return Variable::adopt(out);
}
/// Each element repeated along `axis` (NumPy's repeat); repeats: one count or one per element.
inline Variable repeat(const Variable& x, const std::vector<int32_t>& repeats, int32_t axis) {
  ch_variable* out = nullptr;
  check(ch_functions_repeat(&out, x.get(), repeats.data(), static_cast<int32_t>(repeats.size()),
                            &axis, 1));
  return Variable::adopt(out);
}
/// The flattened x with each element repeated (NumPy's repeat with axis None).
inline Variable repeat(const Variable& x, const std::vector<int32_t>& repeats) {
  ch_variable* out = nullptr;
  check(ch_functions_repeat(&out, x.get(), repeats.data(), static_cast<int32_t>(repeats.size()),
                            nullptr, 0));
  return Variable::adopt(out);
}
/// x tiled reps[i] times along each axis (NumPy's tile).
inline Variable tile(const Variable& x, const std::vector<int32_t>& reps) {
  ch_variable* out = nullptr;
  check(ch_functions_tile(&out, x.get(), reps.data(), static_cast<int32_t>(reps.size())));
  return Variable::adopt(out);
}
/// x padded with `constant_values`: pad_width (before, after) per axis, or 2, or 1 widths.
inline Variable pad(const Variable& x, const std::vector<int32_t>& pad_width,
                    double constant_values = 0.0) {
  ch_variable* out = nullptr;
  check(ch_functions_pad(&out, x.get(), pad_width.data(), static_cast<int32_t>(pad_width.size()),
                         constant_values));
  return Variable::adopt(out);
}
/// Index items for get_item / scatter_add (include/ch/index.h).
inline ch_index index_at(int64_t i) {
  ch_index it = CH_INDEX_INIT;
  it.kind = CH_INDEX_INT;
  it.start = i;
  return it;
}
/// A full slice with a step (x[::step]); `index_slice(a, b, s)` gives x[a:b:s].
inline ch_index index_slice(int64_t step = 1) {
  ch_index it = CH_INDEX_INIT;
  it.step = step;
  return it;
}
inline ch_index index_slice(int64_t start, int64_t stop, int64_t step = 1) {
  ch_index it = CH_INDEX_INIT;
  it.flags = CH_INDEX_HAS_START | CH_INDEX_HAS_STOP;
  it.start = start;
  it.stop = stop;
  it.step = step;
  return it;
}
inline ch_index index_newaxis() {
  ch_index it = CH_INDEX_INIT;
  it.kind = CH_INDEX_NEWAXIS;
  return it;
}
inline ch_index index_ellipsis() {
  ch_index it = CH_INDEX_INIT;
  it.kind = CH_INDEX_ELLIPSIS;
  return it;
}
/// An int32 index array along one axis (borrowed: keep `a` alive for the call).
inline ch_index index_array(const Array& a) {
  ch_index it = CH_INDEX_INIT;
  it.kind = CH_INDEX_ARRAY;
  it.array = a.get();
  return it;
}
/// x[key] (Chainer 7's get_item).
inline Variable get_item(const Variable& x, const std::vector<ch_index>& key) {
  ch_variable* out = nullptr;
  check(ch_functions_get_item(&out, x.get(), key.data(), static_cast<int32_t>(key.size())));
  return Variable::adopt(out);
}
/// A copy of a with b added at a[key] (Chainer 7's scatter_add).
inline Variable scatter_add(const Variable& a, const std::vector<ch_index>& key,
                            const Variable& b) {
  ch_variable* out = nullptr;
  check(ch_functions_scatter_add(&out, a.get(), key.data(), static_cast<int32_t>(key.size()),
                                 b.get()));
  return Variable::adopt(out);
}

/// Max pooling of NCHW x; stride 0 means the window size (the seed's stride=None).
inline Variable max_pooling_2d(const Variable& x, Int2 ksize, Int2 stride = 0, Int2 pad = 0,
                               bool cover_all = true) {
  ch_variable* out = nullptr;
  check(ch_functions_max_pooling_2d(&out, x.get(), ksize.h, ksize.w, stride.h, stride.w, pad.h,
                                    pad.w, cover_all ? 1 : 0));
  return Variable::adopt(out);
}
/// Average pooling of NCHW x (padding counts as zeros); stride 0 means the window size.
inline Variable average_pooling_2d(const Variable& x, Int2 ksize, Int2 stride = 0, Int2 pad = 0) {
  ch_variable* out = nullptr;
  check(ch_functions_average_pooling_2d(&out, x.get(), ksize.h, ksize.w, stride.h, stride.w, pad.h,
                                        pad.w));
  return Variable::adopt(out);
}

// ---- parameterized functions (factories of function objects)

/// y = x W^T + b; W (out_size, in_size) ~ N(0, wscale^2 / in_size) unless initialW, b = bias
/// unless initial_bias; nobias drops b. Parameters "W", "b".
inline Function Linear(int64_t in_size, int64_t out_size, double wscale = 1, double bias = 0,
                       bool nobias = false, const Array& initialW = Array(),
                       const Array& initial_bias = Array(), ch_dtype dtype = CH_FLOAT32) {
  ch_function* out = nullptr;
  check(ch_functions_linear_new(&out, in_size, out_size, dtype, wscale, bias, nobias ? 1 : 0,
                                initialW.get(), initial_bias.get()));
  return Function::adopt(out);
}
/// 2-D convolution of NCHW input; ksize, stride, pad: one int or {h, w}.
inline Function Convolution2D(int64_t in_channels, int64_t out_channels, Int2 ksize,
                              Int2 stride = 1, Int2 pad = 0, double wscale = 1, double bias = 0,
                              bool nobias = false, const Array& initialW = Array(),
                              const Array& initial_bias = Array(), ch_dtype dtype = CH_FLOAT32) {
  ch_function* out = nullptr;
  check(ch_functions_convolution_2d_new(&out, in_channels, out_channels, ksize.h, ksize.w, stride.h,
                                        stride.w, pad.h, pad.w, dtype, wscale, bias, nobias ? 1 : 0,
                                        initialW.get(), initial_bias.get()));
  return Function::adopt(out);
}
/// Embedding: W (in_size, out_size) ~ N(0, 1) unless initialW; applied to int32 ids.
inline Function EmbedID(int64_t in_size, int64_t out_size, const Array& initialW = Array(),
                        ch_dtype dtype = CH_FLOAT32) {
  ch_function* out = nullptr;
  check(ch_functions_embed_id_new(&out, in_size, out_size, dtype, initialW.get()));
  return Function::adopt(out);
}
/// Parametric ReLU with slopes W of `shape` (empty: one slope) filled with `init`.
inline Function PReLU(const Shape& shape = {}, double init = 0.25, ch_dtype dtype = CH_FLOAT32) {
  ch_function* out = nullptr;
  check(ch_functions_prelu_new(&out, shape.data(), detail::shape_ndim(shape), dtype, init));
  return Function::adopt(out);
}
/// A function of no inputs that outputs its parameter "W" (a copy of `array`): p().
inline Function Parameter(const Array& array) {
  ch_function* out = nullptr;
  check(ch_functions_parameter_new(&out, array.get()));
  return Function::adopt(out);
}
/// GoogLeNet's inception module (12 parameters).
inline Function Inception(int64_t in_channels, int64_t out1, int64_t proj3, int64_t out3,
                          int64_t proj5, int64_t out5, int64_t proj_pool,
                          ch_dtype dtype = CH_FLOAT32) {
  ch_function* out = nullptr;
  check(ch_functions_inception_new(&out, in_channels, out1, proj3, out3, proj5, out5, proj_pool,
                                   dtype));
  return Function::adopt(out);
}
/// Hierarchical softmax over a binary tree given flat (see <ch/functions.h>): tree[2k],
/// tree[2k + 1] are the children of internal node k; a code c < 0 is word -c - 1. Applied
/// to (x, t), it returns the summed loss.
inline Function BinaryHierarchicalSoftmax(int64_t in_size, const std::vector<int32_t>& tree,
                                          const Array& initialW = Array(),
                                          ch_dtype dtype = CH_FLOAT32) {
  ch_function* out = nullptr;
  check(ch_functions_binary_hierarchical_softmax_new(
      &out, in_size, tree.data(), static_cast<int64_t>(tree.size() / 2), dtype, initialW.get()));
  return Function::adopt(out);
}
/// The seed's BinaryHierarchicalSoftmax.create_huffman_tree for words 0..counts.size()-1,
/// in the flat encoding BinaryHierarchicalSoftmax takes.
inline std::vector<int32_t> create_huffman_tree(const std::vector<double>& counts) {
  std::vector<int32_t> tree(counts.empty() ? 0 : 2 * (counts.size() - 1));
  check(ch_functions_binary_hierarchical_softmax_create_huffman_tree(
      tree.data(), static_cast<int64_t>(tree.size()), counts.data(),
      static_cast<int64_t>(counts.size())));
  return tree;
}

/// Batch normalization over the batch axis (and trailing axes) per feature of shape `size`
/// ({C} for NCHW input, {D} for (N, D)). A Function: bn(x) runs in the process default mode;
/// bn(x, train, finetune) in a given one.
class BatchNormalization : public Function {
 public:
  explicit BatchNormalization(const Shape& size, double decay = 0.9, double eps = 1e-5,
                              ch_dtype dtype = CH_FLOAT32)
      : Function(create(size, decay, eps, dtype)) {}
  /// View a function object made by the C API as a BatchNormalization (checked on use).
  explicit BatchNormalization(const Function& bn) : Function(bn) {}

  using Function::operator();
  /// Apply in mode `train` (CH_MODE_TRAIN / CH_MODE_TEST / CH_MODE_DEFAULT, or a bool).
  Variable operator()(const Variable& x, int32_t train, bool finetune = false) const {
    ch_variable* out = nullptr;
    check(ch_functions_batch_normalization_apply(&out, get(), x.get(), train, finetune ? 1 : 0));
    return Variable::adopt(out);
  }
  /// Running mean and variance (shared with the function: writing them changes them).
  Array avg_mean() const { return state().first; }
  Array avg_var() const { return state().second; }
  std::pair<Array, Array> state() const {
    ch_array* mean = nullptr;
    ch_array* var = nullptr;
    ch_status st = ch_functions_batch_normalization_state(&mean, &var, get());
    std::pair<Array, Array> out(Array::adopt(mean), Array::adopt(var));
    check(st);
    return out;
  }
  /// The seed's start_finetuning().
  void start_finetuning() { check(ch_functions_batch_normalization_start_finetuning(get())); }

 private:
  static Function create(const Shape& size, double decay, double eps, ch_dtype dtype) {
    ch_function* out = nullptr;
    check(ch_functions_batch_normalization_new(&out, size.data(), detail::shape_ndim(size), decay,
                                               eps, dtype));
    return Function::adopt(out);
  }
};

}  // namespace F

}  // namespace ch

#endif  // CH_FUNCTIONS_HPP
