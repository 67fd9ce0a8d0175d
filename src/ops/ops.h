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

VarPtr relu(const VarPtr& x);
VarPtr leaky_relu(const VarPtr& x, double slope);
VarPtr sigmoid(const VarPtr& x);
VarPtr tanh(const VarPtr& x);
VarPtr softmax(const VarPtr& x);  // over axis 1
FuncPtr prelu_new(const Shape& shape, DType dtype, double init);
// (end of activation)

// ---- connection: Linear, Convolution2D, EmbedID, Parameter, Inception

// initial_W / initial_b: copied (converted to dtype); null = Chainer's initialisation.
FuncPtr linear_new(int64_t in_size, int64_t out_size, DType dtype, double wscale, double bias,
                   bool nobias, const Array* initial_W, const Array* initial_b);
FuncPtr parameter_new(const Array& initial);  // copied
// (end of connection)

// ---- array: transpose, concat, copy

VarPtr transpose(const VarPtr& x, const int32_t* axes, int32_t naxes);  // axes null: reverse
VarPtr concat(const std::vector<VarPtr>& xs, int32_t axis);
VarPtr copy(const VarPtr& x, Device dst);
// (end of array)

// ---- math: matmul

VarPtr matmul(const VarPtr& a, const VarPtr& b, bool transa, bool transb);
VarPtr batch_matmul(const VarPtr& a, const VarPtr& b, bool transa, bool transb);
// (end of math)

// ---- loss: softmax_cross_entropy, mean_squared_error, BinaryHierarchicalSoftmax

VarPtr softmax_cross_entropy(const VarPtr& x, const VarPtr& t);
VarPtr mean_squared_error(const VarPtr& x0, const VarPtr& x1);
// (end of loss)

// ---- evaluation: accuracy

VarPtr accuracy(const VarPtr& y, const VarPtr& t);
// (end of evaluation)

// ---- noise: dropout

VarPtr dropout(const VarPtr& x, double ratio, bool train);  // test mode: returns x
// (end of noise)

// ---- normalization: BatchNormalization, local_response_normalization

// (end of normalization)

// ---- pooling: max_pooling_2d, average_pooling_2d

// (end of pooling)

}  // namespace chainerc::ops
