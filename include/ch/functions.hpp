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
/// Matrix product op(a) op(b) of 2-D operands.
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
/// Softmax along axis 1.
inline Variable softmax(const Variable& x) {
  ch_variable* out = nullptr;
  check(ch_functions_softmax(&out, x.get()));
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
