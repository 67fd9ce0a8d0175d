// Entry points of the built-in differentiable functions, by group as the
// folders of src/ops/ (math, array, activation, connection, loss, evaluation,
// noise, normalization, pooling). Each is defined in its own file
// (ops/<group>/<name>.cpp) with its forward and backward.
#pragma once

#include "core/variable.h"

namespace chainerc::ops {

// ---- math: arithmetic, pow, exp, log, sum, matmul

VarPtr add(const VarPtr& a, const VarPtr& b);
VarPtr sub(const VarPtr& a, const VarPtr& b);
VarPtr mul(const VarPtr& a, const VarPtr& b);
VarPtr div(const VarPtr& a, const VarPtr& b);
VarPtr add_scalar(const VarPtr& x, double s);
VarPtr sub_scalar(const VarPtr& x, double s);   // x - s
VarPtr rsub_scalar(const VarPtr& x, double s);  // s - x
VarPtr mul_scalar(const VarPtr& x, double s);
VarPtr div_scalar(const VarPtr& x, double s);   // x / s
VarPtr rdiv_scalar(const VarPtr& x, double s);  // s / x
VarPtr neg(const VarPtr& x);
VarPtr pow_scalar(const VarPtr& x, double p);   // x ** p
VarPtr rpow_scalar(const VarPtr& x, double s);  // s ** x
VarPtr exp(const VarPtr& x);
VarPtr log(const VarPtr& x);
VarPtr sum(const VarPtr& x);
VarPtr sum_axis(const VarPtr& x, int32_t axis, bool keepdims);
// x summed to `shape` (undoing a broadcast; x itself when the shapes match).
VarPtr sum_to(const VarPtr& x, const Shape& shape);
VarPtr matmul(const VarPtr& a, const VarPtr& b, bool transa, bool transb);
VarPtr batch_matmul(const VarPtr& a, const VarPtr& b, bool transa, bool transb);
// (end of math)

// ---- array: reshape, identity, broadcast_to, transpose, concat, copy

VarPtr reshape(const VarPtr& x, const Shape& shape);  // one extent may be -1
VarPtr identity(const VarPtr& x);
VarPtr broadcast_to(const VarPtr& x, const Shape& shape);
VarPtr transpose(const VarPtr& x, const int32_t* axes, int32_t naxes);  // axes null: reverse
VarPtr concat(const std::vector<VarPtr>& xs, int32_t axis);
VarPtr copy(const VarPtr& x, Device dst);
// (end of array)

// ---- activation: relu, leaky_relu, sigmoid, tanh, softmax, PReLU, lstm

VarPtr relu(const VarPtr& x);
VarPtr leaky_relu(const VarPtr& x, double slope);
VarPtr sigmoid(const VarPtr& x);
VarPtr tanh(const VarPtr& x);
VarPtr softmax(const VarPtr& x);  // over axis 1
// A softmax node on x whose output is `y`, softmax(x) as computed before:
// for backwards that kept the probabilities but not x's data.
VarPtr softmax_of_kept(const VarPtr& x, const Array& y);
FuncPtr prelu_new(const Shape& shape, DType dtype, double init);
// Chainer 1.0.1's lstm: returns {c, h}; gates interleaved in x (see lstm.cpp).
std::vector<VarPtr> lstm(const VarPtr& c_prev, const VarPtr& x);
// (end of activation)

// ---- connection: Linear, Convolution2D, EmbedID, Parameter, Inception

// initial_W / initial_b: copied (converted to dtype); null = Chainer's initialisation.
FuncPtr linear_new(int64_t in_size, int64_t out_size, DType dtype, double wscale, double bias,
                   bool nobias, const Array* initial_W, const Array* initial_b);
FuncPtr parameter_new(const Array& initial);  // copied
// Convolution2D (NCHW): a function object holding "W" (out, in, kh, kw) and,
// unless nobias, "b" (out); initial_W/initial_b null = Chainer 1.0.1's init.
FuncPtr convolution_2d_new(int64_t in_channels, int64_t out_channels, int64_t kh, int64_t kw,
                           int64_t sy, int64_t sx, int64_t ph, int64_t pw, DType dtype,
                           double wscale, double bias, bool nobias, const Array* initial_W,
                           const Array* initial_b);
// A node of Convolution2D `conv` that reads its W (and b) at params[offset]
// (and [offset + 1]) instead of its own list.
FuncPtr convolution_2d_rebind(const FuncPtr& conv, std::shared_ptr<Parameters> params,
                              size_t offset);
// Inception (GoogLeNet) module: parameters "conv1/W", "conv1/b", "conv3/...",
// "conv5/...", "proj3/...", "proj5/...", "projp/..." (Chainer's FunctionSet order).
FuncPtr inception_new(int64_t in_channels, int64_t out1, int64_t proj3, int64_t out3, int64_t proj5,
                      int64_t out5, int64_t proj_pool, DType dtype);

// EmbedID function object (initial_W: copied; null = N(0, 1) samples).
FuncPtr embed_id_new(int64_t in_size, int64_t out_size, DType dtype, const Array* initial_W);
// (end of connection)

// ---- loss: softmax_cross_entropy, mean_squared_error, BinaryHierarchicalSoftmax

VarPtr softmax_cross_entropy(const VarPtr& x, const VarPtr& t);
VarPtr mean_squared_error(const VarPtr& x0, const VarPtr& x1);
// BinaryHierarchicalSoftmax function object; `tree` holds 2 * n_internal
// child codes as documented at ch_functions_binary_hierarchical_softmax_new.
FuncPtr binary_hierarchical_softmax_new(int64_t in_size, const int32_t* tree, int64_t n_internal,
                                        DType dtype, const Array* initial_W);
// Chainer's create_huffman_tree for words 0..n-1 with `counts`, in the flat
// encoding above (2 * (n - 1) entries, internal nodes numbered in pre-order).
std::vector<int32_t> hsm_create_huffman_tree(const double* counts, int64_t n_words);
// (end of loss)

// ---- evaluation: accuracy

VarPtr accuracy(const VarPtr& y, const VarPtr& t);
// (end of evaluation)

// ---- noise: dropout

VarPtr dropout(const VarPtr& x, double ratio, bool train);  // test mode: returns x
// (end of noise)

// ---- normalization: BatchNormalization, local_response_normalization

// Running statistics of a BatchNormalization, shared by its applications.
struct BatchNormState {
  Array avg_mean, avg_var;
  int64_t n = 0;  // batches seen in finetune mode since start_finetuning
};
// BatchNormalization over the feature shape `size` (gamma ones, beta zeros).
// Applied through clone() it uses the process default mode (train or test).
FuncPtr batch_normalization_new(const Shape& size, double decay, double eps, DType dtype);
// An unapplied node of `bn` in the given mode (Error if bn is not one).
FuncPtr batch_normalization_node(const FuncPtr& bn, bool train, bool finetune);
std::shared_ptr<BatchNormState> batch_normalization_state(const FuncPtr& bn);
VarPtr local_response_normalization(const VarPtr& x, int64_t n, double k, double alpha,
                                    double beta);

// (end of normalization)

// ---- pooling: max_pooling_2d, average_pooling_2d

// stride <= 0 means the window size (the seed's stride=None).
VarPtr max_pooling_2d(const VarPtr& x, int64_t kh, int64_t kw, int64_t sy, int64_t sx, int64_t ph,
                      int64_t pw, bool cover_all);
// An unapplied max pooling node (for composite functions such as Inception).
FuncPtr max_pooling_2d_node(int64_t kh, int64_t kw, int64_t sy, int64_t sx, int64_t ph, int64_t pw,
                            bool cover_all);
VarPtr average_pooling_2d(const VarPtr& x, int64_t kh, int64_t kw, int64_t sy, int64_t sx,
                          int64_t ph, int64_t pw);

// (end of pooling)

}  // namespace chainerc::ops
