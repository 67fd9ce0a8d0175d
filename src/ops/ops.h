// Entry points of the built-in differentiable functions, by group as the
// folders of src/ops/ (math, array, activation, connection, loss, evaluation,
// noise, normalization, pooling). Each is defined in its own file
// (ops/<group>/<name>.cpp) with its forward and backward. The functions of the
// C API are declared in the generated blocks (from src/ops/manifest.py); what
// only the ops and the C API shims use follows each block.
#pragma once

#include "core/variable.h"

namespace chainerc::ops {

// ---- math: arithmetic, pow, exp, log, sum, matmul

// BEGIN GENERATED math (scripts/gen_functions.py; edit src/ops/manifest.py)
// a + b with NumPy broadcasting.
VarPtr add(const VarPtr& a, const VarPtr& b);
// a - b with NumPy broadcasting.
VarPtr sub(const VarPtr& a, const VarPtr& b);
// a * b with NumPy broadcasting.
VarPtr mul(const VarPtr& a, const VarPtr& b);
// a / b with NumPy broadcasting.
VarPtr div(const VarPtr& a, const VarPtr& b);
// x + s (= s + x).
VarPtr add_scalar(const VarPtr& x, double s);
// x - s.
VarPtr sub_scalar(const VarPtr& x, double s);
// s - x.
VarPtr rsub_scalar(const VarPtr& x, double s);
// x * s (= s * x).
VarPtr mul_scalar(const VarPtr& x, double s);
// x / s.
VarPtr div_scalar(const VarPtr& x, double s);
// s / x.
VarPtr rdiv_scalar(const VarPtr& x, double s);
// -x.
VarPtr neg(const VarPtr& x);
// x ** p for a scalar p.
VarPtr pow_scalar(const VarPtr& x, double p);
// s ** x for a scalar base s > 0.
VarPtr rpow_scalar(const VarPtr& x, double s);
// Elementwise e ** x.
VarPtr exp(const VarPtr& x);
// Elementwise natural logarithm.
VarPtr log(const VarPtr& x);
// Elementwise square x * x (gradient 2 x gy).
VarPtr square(const VarPtr& x);
// Elementwise square root (NaN below 0; gradient gy / (2 y)).
VarPtr sqrt(const VarPtr& x);
// Elementwise reciprocal square root 1 / sqrt(x) (gradient -gy y^3 / 2).
VarPtr rsqrt(const VarPtr& x);
// Elementwise absolute value |x| (gradient sign(x) gy, 0 at x = 0).
VarPtr absolute(const VarPtr& x);
// Elementwise error function erf(x) (gradient 2 / sqrt(pi) exp(-x^2) gy).
VarPtr erf(const VarPtr& x);
// x limited to [x_min, x_max] (gradient gy where x_min <= x <= x_max).
VarPtr clip(const VarPtr& x, double x_min, double x_max);
// Elementwise maximum of a and b with NumPy broadcasting.
VarPtr maximum(const VarPtr& a, const VarPtr& b);
// Elementwise minimum of a and b with NumPy broadcasting.
VarPtr minimum(const VarPtr& a, const VarPtr& b);
// x where condition is nonzero, else y, with NumPy broadcasting.
VarPtr where(const Array& condition, const VarPtr& x, const VarPtr& y);
// Sum of all elements: a 0-d variable.
VarPtr sum(const VarPtr& x);
// Sum along `axis` (negative counts from the end); keepdims keeps it as 1.
VarPtr sum_axis(const VarPtr& x, int32_t axis, bool keepdims);
// Sum over a set of axes (naxes 0: all); keepdims keeps them with extent 1.
VarPtr sum_axes(const VarPtr& x, const int32_t* axes, int32_t naxes, bool keepdims);
// Mean over a set of axes (naxes 0: all); keepdims keeps them with extent 1.
VarPtr mean(const VarPtr& x, const int32_t* axes, int32_t naxes, bool keepdims);
// Weighted average sum(x w) / sum(w) over all axes or one axis.
VarPtr average(const VarPtr& x, const int32_t* axes, int32_t naxes, const VarPtr& weights,
               bool keepdims);
// Maximum over a set of axes (naxes 0: all); the gradient goes to every maximum.
VarPtr max(const VarPtr& x, const int32_t* axes, int32_t naxes, bool keepdims);
// Minimum over a set of axes (naxes 0: all); the gradient goes to every minimum.
VarPtr min(const VarPtr& x, const int32_t* axes, int32_t naxes, bool keepdims);
// int32 index of the first maximum over all elements or one axis.
VarPtr argmax(const VarPtr& x, const int32_t* axes, int32_t naxes);
// int32 index of the first minimum over all elements or one axis.
VarPtr argmin(const VarPtr& x, const int32_t* axes, int32_t naxes);
// log(sum(exp(x))) over a set of axes (naxes 0: all), computed stably.
VarPtr logsumexp(const VarPtr& x, const int32_t* axes, int32_t naxes);
// Cumulative sum along one axis, or of the flattened x (naxes 0).
VarPtr cumsum(const VarPtr& x, const int32_t* axes, int32_t naxes);
// Matrix product op(a) op(b) by NumPy's matmul rules (Chainer 7's matmul).
VarPtr matmul(const VarPtr& a, const VarPtr& b, bool transa, bool transb);
// Batched matrix product.
VarPtr batch_matmul(const VarPtr& a, const VarPtr& b, bool transa, bool transb);
// END GENERATED math
// x summed to `shape` (undoing a broadcast; x itself when the shapes match).
VarPtr sum_to(const VarPtr& x, const Shape& shape);
// (end of math)

// ---- array: reshape, identity, broadcast_to, transpose, concat, copy

// BEGIN GENERATED array (scripts/gen_functions.py; edit src/ops/manifest.py)
// Same data, another shape of the same size (one extent may be -1).
VarPtr reshape(const VarPtr& x, const Shape& shape);
// Returns its input; gradient passes through.
VarPtr identity(const VarPtr& x);
// Broadcast to `shape` by NumPy's rules.
VarPtr broadcast_to(const VarPtr& x, const Shape& shape);
// Permute the axes (NumPy's transpose); none reverses them.
VarPtr transpose(const VarPtr& x, const int32_t* axes, int32_t naxes);
// Copy to the device `dst`; the gradient is copied back.
VarPtr copy(const VarPtr& x, Device dst);
// x with a new axis of extent 1 at `axis` (negative counts from the end).
VarPtr expand_dims(const VarPtr& x, int32_t axis);
// x without the axes of extent 1 (all of them, or those in `axis`).
VarPtr squeeze(const VarPtr& x, const int32_t* axis, int32_t naxis);
// x as a 1-d array of its size.
VarPtr flatten(const VarPtr& x);
// x with axes axis1 and axis2 interchanged (a transpose).
VarPtr swapaxes(const VarPtr& x, int32_t axis1, int32_t axis2);
// x reversed along `axis`; the gradient is gy reversed.
VarPtr flip(const VarPtr& x, int32_t axis);
// Join variables of one shape along a new axis `axis`.
VarPtr stack(const std::vector<VarPtr>& xs, int32_t axis);
// Repeat x's elements along an axis (NumPy's repeat).
VarPtr repeat(const VarPtr& x, const int32_t* repeats, int32_t nrepeats, const int32_t* axis,
              int32_t naxis);
// x tiled `reps` times along each axis (NumPy's tile).
VarPtr tile(const VarPtr& x, const int32_t* reps, int32_t nreps);
// x padded with a constant (mode 'constant'): (before, after) per axis.
VarPtr pad(const VarPtr& x, const int32_t* pad_width, int32_t npad_width, double constant_values);
// x converted to `dtype` (Chainer's `type`); the gradient is cast back.
VarPtr cast(const VarPtr& x, DType dtype);
// y[i] = x[i, t[i]] for x (B, N) and int32 labels t (B,).
VarPtr select_item(const VarPtr& x, const VarPtr& t);
// END GENERATED array
VarPtr concat(const std::vector<VarPtr>& xs, int32_t axis);
// One item of an index key (ch_index of include/ch/index.h); the default is
// a full slice.
struct IndexItem {
  enum Kind { kInt = 0, kSlice = 1, kNewAxis = 2, kEllipsis = 3, kArray = 4 };
  Kind kind = kSlice;
  int64_t start = 0, stop = 0, step = 1;
  bool has_start = false, has_stop = false;
  Array array;  // kArray: int32 indices
};
// x[key] (get_item) and a with b added at a[key] (scatter_add).
VarPtr get_item(const VarPtr& x, const std::vector<IndexItem>& items);
VarPtr scatter_add(const VarPtr& a, const std::vector<IndexItem>& items, const VarPtr& b);
// x cut along axis at indices (when not NULL) or into `sections` pieces.
std::vector<VarPtr> split_axis(const VarPtr& x, const int64_t* indices, int32_t nindices,
                               int32_t sections, int32_t axis);
// (end of array)

// ---- activation: relu, leaky_relu, sigmoid, tanh, softmax, PReLU, lstm

// BEGIN GENERATED activation (scripts/gen_functions.py; edit src/ops/manifest.py)
// Rectified linear unit max(0, x).
VarPtr relu(const VarPtr& x);
// Leaky ReLU: x for x >= 0, slope * x for x < 0.
VarPtr leaky_relu(const VarPtr& x, double slope);
// Logistic sigmoid 1 / (1 + exp(-x)).
VarPtr sigmoid(const VarPtr& x);
// Hyperbolic tangent.
VarPtr tanh(const VarPtr& x);
// GELU x Phi(x) = x (1 + erf(x / sqrt 2)) / 2 (PyTorch's exact form).
VarPtr gelu(const VarPtr& x);
// GELU's tanh approximation (PyTorch's gelu with approximate='tanh').
VarPtr gelu_tanh(const VarPtr& x);
// SiLU x sigmoid(x) (PyTorch's silu; Chainer's swish with beta = 1).
VarPtr silu(const VarPtr& x);
// Softplus log(1 + exp(beta x)) / beta (gradient gy sigmoid(beta x)).
VarPtr softplus(const VarPtr& x, double beta);
// ELU: x for x > 0, alpha (exp(x) - 1) for x <= 0.
VarPtr elu(const VarPtr& x, double alpha);
// Clipped ReLU min(max(0, x), z).
VarPtr clipped_relu(const VarPtr& x, double z);
// Swish x sigmoid(beta x), beta broadcast along axis 1 (Chainer's swish).
VarPtr swish(const VarPtr& x, const VarPtr& beta);
// Softmax along axis 1.
VarPtr softmax(const VarPtr& x);
// Softmax along any axis (Chainer 7's softmax(x, axis=1)).
VarPtr softmax_axis(const VarPtr& x, int32_t axis);
// log(softmax(x)) along any axis, computed stably (x - logsumexp).
VarPtr log_softmax(const VarPtr& x, int32_t axis);
// New PReLU function object with slopes W of `shape`.
FuncPtr prelu_new(const Shape& shape, DType dtype, double init);
// END GENERATED activation
// A softmax node on x whose output is `y`, softmax(x) as computed before:
// for backwards that kept the probabilities but not x's data.
VarPtr softmax_of_kept(const VarPtr& x, const Array& y);
// Chainer 1.0.1's lstm: returns {c, h}; gates interleaved in x (see lstm.cpp).
std::vector<VarPtr> lstm(const VarPtr& c_prev, const VarPtr& x);
// (end of activation)

// ---- connection: Linear, Convolution2D, EmbedID, Parameter, Inception

// BEGIN GENERATED connection (scripts/gen_functions.py; edit src/ops/manifest.py)
// New Linear function object y = x W^T + b.
FuncPtr linear_new(int64_t in_size, int64_t out_size, DType dtype, double wscale, double bias,
                   bool nobias, const Array* initial_W, const Array* initial_b);
// New Parameter function object that outputs its parameter W.
FuncPtr parameter_new(const Array& initial);
// New Convolution2D function object (NCHW).
FuncPtr convolution_2d_new(int64_t in_channels, int64_t out_channels, int64_t kh, int64_t kw,
                           int64_t sy, int64_t sx, int64_t ph, int64_t pw, DType dtype,
                           double wscale, double bias, bool nobias, const Array* initial_W,
                           const Array* initial_b);
// New EmbedID function object: rows of W by int32 ids.
FuncPtr embed_id_new(int64_t in_size, int64_t out_size, DType dtype, const Array* initial_W);
// New Inception (GoogLeNet) module function object.
FuncPtr inception_new(int64_t in_channels, int64_t out1, int64_t proj3, int64_t out3, int64_t proj5,
                      int64_t out5, int64_t proj_pool, DType dtype);
// Linear function y = x W^T + b of variables x, W (out, in) and b (out,).
VarPtr linear(const VarPtr& x, const VarPtr& W, const VarPtr& b, int32_t n_batch_axes);
// Linear function y = x W^T without bias (Chainer's b=None).
VarPtr linear_nobias(const VarPtr& x, const VarPtr& W, int32_t n_batch_axes);
// END GENERATED connection
// A node of Convolution2D `conv` that reads its W (and b) at params[offset]
// (and [offset + 1]) instead of its own list.
FuncPtr convolution_2d_rebind(const FuncPtr& conv, std::shared_ptr<Parameters> params,
                              size_t offset);
// (end of connection)

// ---- loss: softmax_cross_entropy, mean_squared_error, BinaryHierarchicalSoftmax

// BEGIN GENERATED loss (scripts/gen_functions.py; edit src/ops/manifest.py)
// Mean cross entropy of softmax(x) against int32 labels t.
VarPtr softmax_cross_entropy(const VarPtr& x, const VarPtr& t);
// Mean squared error over all elements.
VarPtr mean_squared_error(const VarPtr& x0, const VarPtr& x1);
// END GENERATED loss
// BinaryHierarchicalSoftmax function object; `tree` holds 2 * n_internal
// child codes as documented at ch_functions_binary_hierarchical_softmax_new.
FuncPtr binary_hierarchical_softmax_new(int64_t in_size, const int32_t* tree, int64_t n_internal,
                                        DType dtype, const Array* initial_W);
// Chainer's create_huffman_tree for words 0..n-1 with `counts`, in the flat
// encoding above (2 * (n - 1) entries, internal nodes numbered in pre-order).
std::vector<int32_t> hsm_create_huffman_tree(const double* counts, int64_t n_words);
// (end of loss)

// ---- evaluation: accuracy

// BEGIN GENERATED evaluation (scripts/gen_functions.py; edit src/ops/manifest.py)
// Classification accuracy (not differentiable).
VarPtr accuracy(const VarPtr& y, const VarPtr& t);
// END GENERATED evaluation
// (end of evaluation)

// ---- noise: dropout

// BEGIN GENERATED noise (scripts/gen_functions.py; edit src/ops/manifest.py)
// Dropout: zero elements with probability ratio, scale the rest by 1/(1-ratio).
VarPtr dropout(const VarPtr& x, double ratio, bool train);
// END GENERATED noise
// (end of noise)

// ---- normalization: BatchNormalization, local_response_normalization

// BEGIN GENERATED normalization (scripts/gen_functions.py; edit src/ops/manifest.py)
// Local response normalization across channels.
VarPtr local_response_normalization(const VarPtr& x, int64_t n, double k, double alpha,
                                    double beta);
// New BatchNormalization function object over features of shape `size`.
FuncPtr batch_normalization_new(const Shape& size, double decay, double eps, DType dtype);
// Layer normalization of each row over the last axis, scaled by gamma, shifted by beta.
VarPtr layer_normalization(const VarPtr& x, const VarPtr& gamma, const VarPtr& beta, double eps);
// RMS normalization over the last axis: x / sqrt(mean(x^2) + eps) * gamma.
VarPtr rms_normalization(const VarPtr& x, const VarPtr& gamma, double eps);
// Group normalization: statistics per sample and group of channels.
VarPtr group_normalization(const VarPtr& x, int32_t groups, const VarPtr& gamma, const VarPtr& beta,
                           double eps);
// END GENERATED normalization
// Running statistics of a BatchNormalization, shared by its applications.
struct BatchNormState {
  Array avg_mean, avg_var;
  int64_t n = 0;  // batches seen in finetune mode since start_finetuning
};
// An unapplied node of `bn` in the given mode (Error if bn is not one).
FuncPtr batch_normalization_node(const FuncPtr& bn, bool train, bool finetune);
std::shared_ptr<BatchNormState> batch_normalization_state(const FuncPtr& bn);

// (end of normalization)

// ---- pooling: max_pooling_2d, average_pooling_2d

// BEGIN GENERATED pooling (scripts/gen_functions.py; edit src/ops/manifest.py)
// Spatial max pooling of NCHW x.
VarPtr max_pooling_2d(const VarPtr& x, int64_t kh, int64_t kw, int64_t sy, int64_t sx, int64_t ph,
                      int64_t pw, bool cover_all);
// Spatial average pooling of NCHW x; padding counts as zeros.
VarPtr average_pooling_2d(const VarPtr& x, int64_t kh, int64_t kw, int64_t sy, int64_t sx,
                          int64_t ph, int64_t pw);
// END GENERATED pooling
// An unapplied max pooling node (for composite functions such as Inception).
FuncPtr max_pooling_2d_node(int64_t kh, int64_t kw, int64_t sy, int64_t sx, int64_t ph, int64_t pw,
                            bool cover_all);

// (end of pooling)

}  // namespace chainerc::ops
