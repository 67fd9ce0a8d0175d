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

// (end of activation)

// ---- connection: Linear, Convolution2D, EmbedID, Parameter, Inception

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
// A parameter array of `shape` and `dtype`: uninitialised, or a converted copy
// of *init (Error(CH_ERR_SHAPE) naming `who` and `what` if its shape differs).
Array initial_parameter(const Array* init, DType dtype, const Shape& shape, const char* who,
                        const char* what);
// Inception (GoogLeNet) module: parameters "conv1/W", "conv1/b", "conv3/...",
// "conv5/...", "proj3/...", "proj5/...", "projp/..." (Chainer's FunctionSet order).
FuncPtr inception_new(int64_t in_channels, int64_t out1, int64_t proj3, int64_t out3, int64_t proj5,
                      int64_t out5, int64_t proj_pool, DType dtype);

// (end of connection)

// ---- array: transpose, concat, copy

// (end of array)

// ---- math: matmul

// (end of math)

// ---- loss: softmax_cross_entropy, mean_squared_error, BinaryHierarchicalSoftmax

// (end of loss)

// ---- evaluation: accuracy

// (end of evaluation)

// ---- noise: dropout

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
