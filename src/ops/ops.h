// Entry points of the built-in differentiable functions. Each is defined in
// its own file (ops/<group>/<name>.cpp) with its forward and backward.
#pragma once

#include "core/variable.h"

namespace chainerc::ops {

// math/
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

// array/
VarPtr reshape(const VarPtr& x, const Shape& shape);  // one extent may be -1
VarPtr identity(const VarPtr& x);
VarPtr broadcast_to(const VarPtr& x, const Shape& shape);

// ---- activation: relu, leaky_relu, sigmoid, tanh, softmax, PReLU, lstm

// Chainer 1.0.1's lstm: returns {c, h}; gates interleaved in x (see lstm.cpp).
std::vector<VarPtr> lstm(const VarPtr& c_prev, const VarPtr& x);
// (end of activation)

// ---- connection: Linear, Convolution2D, EmbedID, Parameter, Inception

// EmbedID function object (initial_W: copied; null = N(0, 1) samples).
FuncPtr embed_id_new(int64_t in_size, int64_t out_size, DType dtype, const Array* initial_W);
// (end of connection)

// ---- array: transpose, concat, copy

// (end of array)

// ---- math: matmul

// (end of math)

// ---- loss: softmax_cross_entropy, mean_squared_error, BinaryHierarchicalSoftmax

// BinaryHierarchicalSoftmax function object; `tree` holds 2 * n_internal
// child codes as documented at ch_functions_binary_hierarchical_softmax_new.
FuncPtr binary_hierarchical_softmax_new(int64_t in_size, const int32_t* tree, int64_t n_internal,
                                        DType dtype, const Array* initial_W);
// Chainer's create_huffman_tree for words 0..n-1 with `counts`, in the flat
// encoding above (2 * (n - 1) entries, internal nodes numbered in pre-order).
std::vector<int32_t> hsm_create_huffman_tree(const double* counts, int64_t n_words);
// (end of loss)

// ---- evaluation: accuracy

// (end of evaluation)

// ---- noise: dropout

// (end of noise)

// ---- normalization: BatchNormalization, local_response_normalization

// (end of normalization)

// ---- pooling: max_pooling_2d, average_pooling_2d

// (end of pooling)

}  // namespace chainerc::ops
