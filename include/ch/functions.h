/*
 * chainerc — built-in differentiable functions (Chainer's chainer.functions
 * and Variable operators). Each takes variables and returns a new variable:
 * *out is a new reference; release with ch_variable_release. Inputs are
 * borrowed for the duration of the call. Inputs must share one dtype
 * (float32 or float64 unless stated) and one device; binary functions
 * broadcast their operands as NumPy does. Scalars take the array's dtype.
 */
#ifndef CH_FUNCTIONS_H
#define CH_FUNCTIONS_H

#include "common.h"
#include "config.h"

#ifdef __cplusplus
extern "C" {
#endif

/* a + b, a - b, a * b, a / b with NumPy broadcasting. */
CH_API ch_status ch_functions_add(ch_variable** out, ch_variable* a, ch_variable* b);
CH_API ch_status ch_functions_sub(ch_variable** out, ch_variable* a, ch_variable* b);
CH_API ch_status ch_functions_mul(ch_variable** out, ch_variable* a, ch_variable* b);
CH_API ch_status ch_functions_div(ch_variable** out, ch_variable* a, ch_variable* b);

/* x + s (= s + x), x - s, s - x, x * s (= s * x), x / s, s / x. */
CH_API ch_status ch_functions_add_scalar(ch_variable** out, ch_variable* x, double s);
CH_API ch_status ch_functions_sub_scalar(ch_variable** out, ch_variable* x, double s);
CH_API ch_status ch_functions_rsub_scalar(ch_variable** out, ch_variable* x, double s);
CH_API ch_status ch_functions_mul_scalar(ch_variable** out, ch_variable* x, double s);
CH_API ch_status ch_functions_div_scalar(ch_variable** out, ch_variable* x, double s);
CH_API ch_status ch_functions_rdiv_scalar(ch_variable** out, ch_variable* x, double s);

/* -x */
CH_API ch_status ch_functions_neg(ch_variable** out, ch_variable* x);
/* x ** p for a scalar p; s ** x for a scalar base s > 0. */
CH_API ch_status ch_functions_pow_scalar(ch_variable** out, ch_variable* x, double p);
CH_API ch_status ch_functions_rpow_scalar(ch_variable** out, ch_variable* x, double s);
/* Elementwise e**x and natural logarithm. */
CH_API ch_status ch_functions_exp(ch_variable** out, ch_variable* x);
CH_API ch_status ch_functions_log(ch_variable** out, ch_variable* x);

/* Sum of all elements: a 0-d variable. */
CH_API ch_status ch_functions_sum(ch_variable** out, ch_variable* x);
/* Sum along `axis` (negative counts from the end); keepdims keeps it as 1. */
CH_API ch_status ch_functions_sum_axis(ch_variable** out, ch_variable* x, int32_t axis,
                                       int32_t keepdims);

/* Same data, another shape of the same size; one extent may be -1 (inferred).
 * Any dtype. */
CH_API ch_status ch_functions_reshape(ch_variable** out, ch_variable* x, const int64_t* shape,
                                      int32_t ndim);
/* Returns its input's data as a new variable; gradient passes through. Any dtype. */
CH_API ch_status ch_functions_identity(ch_variable** out, ch_variable* x);
/* Broadcast to `shape` by NumPy's rules; backward sums over broadcast axes. */
CH_API ch_status ch_functions_broadcast_to(ch_variable** out, ch_variable* x,
                                           const int64_t* shape, int32_t ndim);

/* ======================================================================
 * activation: relu, leaky_relu, sigmoid, tanh, softmax, PReLU, lstm
 * ====================================================================== */

/* Rectified linear unit y = max(0, x) (Chainer's relu; use_cudnn has no
 * counterpart). Gradient: gy where x > 0, else 0. */
CH_API ch_status ch_functions_relu(ch_variable** out, ch_variable* x);
/* Leaky ReLU y = x for x >= 0, slope * x for x < 0 (Chainer's leaky_relu;
 * the seed's default slope is 0.2). */
CH_API ch_status ch_functions_leaky_relu(ch_variable** out, ch_variable* x, double slope);
/* Logistic sigmoid y = 1 / (1 + exp(-x)). */
CH_API ch_status ch_functions_sigmoid(ch_variable** out, ch_variable* x);
/* Hyperbolic tangent. */
CH_API ch_status ch_functions_tanh(ch_variable** out, ch_variable* x);
/* Softmax along axis 1 of an (N, C) input (an (N, C, ...) input is
 * normalised over C at every trailing position); numerically stable
 * (the row maximum is subtracted). CH_ERR_SHAPE below 2 dimensions. */
CH_API ch_status ch_functions_softmax(ch_variable** out, ch_variable* x);
/* New PReLU function object (Chainer's PReLU(shape=(), init=0.25)):
 * y = x for x >= 0, W x for x < 0, with one parameter "W" of shape
 * `shape` (ndim extents; ndim 0 = a single slope) and `dtype`, filled with
 * `init`. Applied with ch_function_apply to one input of shape
 * (N, *shape, ...): W is broadcast over the batch axis and the axes after its
 * own. Backward accumulates into W's gradient (see ch_function_parameter).
 * *out: new reference; release with ch_function_release. */
CH_API ch_status ch_functions_prelu_new(ch_function** out, const int64_t* shape, int32_t ndim,
                                        ch_dtype dtype, double init);

/* (end of activation) */

/* ======================================================================
 * connection: Linear, Convolution2D, EmbedID, Parameter, Inception
 * ====================================================================== */

/* New Linear function object (Chainer's Linear(in_size, out_size, wscale=1,
 * bias=0, nobias=False, initialW=None, initial_bias=None)): y = x W^T + b.
 * Parameters, in order: "W" of shape (out_size, in_size) and, unless nobias,
 * "b" of shape (out_size,), both of `dtype` (CH_FLOAT32 or CH_FLOAT64).
 * W is drawn from N(0, wscale^2 / in_size) with the engine's generator
 * (ch_config_seed) unless initial_W is given; b is filled with `bias`
 * unless initial_b is given. initial_W / initial_b (NULL = default) are
 * copied, converted to `dtype`, and must have the parameter's shape;
 * initial_b with nobias is CH_ERR_INVALID_ARGUMENT. Gradients start at zero.
 * Apply with ch_function_apply to one input x of shape (N, in_size) or
 * (N, ...) whose trailing extents multiply to in_size (flattened); the output
 * is (N, out_size). Backward accumulates gW += gy^T x and gb += sum(gy, 0)
 * and gives x the gradient gy W in x's shape.
 * *out: new reference; release with ch_function_release. */
CH_API ch_status ch_functions_linear_new(ch_function** out, int64_t in_size, int64_t out_size,
                                         ch_dtype dtype, double wscale, double bias, int32_t nobias,
                                         const ch_array* initial_W, const ch_array* initial_b);
/* New Parameter function object (Chainer's Parameter(array)): applied with
 * ch_function_apply to no inputs, it outputs its parameter "W" (a copy of
 * `initial`, float32 or float64); the output shares the parameter's memory.
 * Backward accumulates the output's gradient into W's gradient.
 * *out: new reference; release with ch_function_release. */
CH_API ch_status ch_functions_parameter_new(ch_function** out, const ch_array* initial);

/* (end of connection) */

/* ======================================================================
 * array: transpose, concat, copy
 * ====================================================================== */

/* Permute the axes: output axis i is input axis axes[i] (NumPy's transpose;
 * negative axes count from the end). axes NULL (naxes 0) reverses the axes.
 * naxes must equal x's ndim and the axes must be distinct. Any dtype. */
CH_API ch_status ch_functions_transpose(ch_variable** out, ch_variable* x, const int32_t* axes,
                                        int32_t naxes);
/* Concatenate the n variables xs along `axis` (Chainer's concat; the seed's
 * default axis is 1). They must share dtype and ndim and agree on all other
 * extents. Any dtype. xs: n borrowed handles. */
CH_API ch_status ch_functions_concat(ch_variable** out, ch_variable* const* xs, size_t n,
                                     int32_t axis);
/* Copy x to the device `dst` (Chainer's copy). Only ch_device_cpu() exists in
 * this build: a CUDA device gives CH_ERR_UNSUPPORTED, an unknown device type
 * or index CH_ERR_DEVICE. The gradient is copied back to x's device. */
CH_API ch_status ch_functions_copy(ch_variable** out, ch_variable* x, ch_device dst);

/* (end of array) */

/* ======================================================================
 * math: matmul
 * ====================================================================== */

/* Matrix product op(a) op(b) (Chainer's matmul), op transposing when transa /
 * transb is non-zero. a and b are 2-D; a 1-D operand of length n is treated
 * as a column vector (n, 1). The output is 2-D. */
CH_API ch_status ch_functions_matmul(ch_variable** out, ch_variable* a, ch_variable* b,
                                     int32_t transa, int32_t transb);
/* Batched matrix product (Chainer's batch_matmul): for (B, m, k) and (B, k, n)
 * operands (before op), out[i] = op(a[i]) op(b[i]), of shape (B, m, n). A 2-D
 * operand (B, n) is a batch of column vectors (B, n, 1). */
CH_API ch_status ch_functions_batch_matmul(ch_variable** out, ch_variable* a, ch_variable* b,
                                           int32_t transa, int32_t transb);

/* (end of math) */

/* ======================================================================
 * loss: softmax_cross_entropy, mean_squared_error, BinaryHierarchicalSoftmax
 * ====================================================================== */

/* Cross entropy of softmax(x) against labels (Chainer's
 * softmax_cross_entropy): mean over the batch of -log softmax(x)[i, t[i]] for
 * scores x (N, C) and int32 labels t (N,), computed stably (log-sum-exp).
 * Output: 0-d, x's dtype. A label outside [0, C) is CH_ERR_INVALID_ARGUMENT
 * naming its index and value; t must be int32 (CH_ERR_DTYPE). Differentiable
 * with respect to x only. */
CH_API ch_status ch_functions_softmax_cross_entropy(ch_variable** out, ch_variable* x,
                                                    ch_variable* t);
/* Mean squared error sum((x0 - x1)^2) / size over all elements, not scaled by
 * 1/2 (Chainer's mean_squared_error). Equal shapes and dtypes; output 0-d. */
CH_API ch_status ch_functions_mean_squared_error(ch_variable** out, ch_variable* x0,
                                                 ch_variable* x1);

/* (end of loss) */

/* ======================================================================
 * evaluation: accuracy
 * ====================================================================== */

/* Classification accuracy (Chainer's accuracy): the fraction of rows of y
 * (N, C) (or (N, ...), viewed as (N, C)) whose first maximum is at the int32
 * label t[i]. Output: 0-d array of y's dtype. Not differentiable (backward
 * gives y and t no gradient). A label outside [0, C) is
 * CH_ERR_INVALID_ARGUMENT. */
CH_API ch_status ch_functions_accuracy(ch_variable** out, ch_variable* y, ch_variable* t);

/* (end of evaluation) */

/* ======================================================================
 * noise: dropout
 * ====================================================================== */

/* Dropout (Chainer's dropout(x, ratio=0.5, train=True)): with train
 * (CH_MODE_TRAIN, or CH_MODE_DEFAULT while the process default is train),
 * each element is zeroed with probability `ratio` and the others are scaled
 * by 1 / (1 - ratio); the mask is drawn from the engine's generator and the
 * gradient is gy times the same mask. In test mode *out is a new reference to
 * x itself (no copy, no graph node). ratio must be in [0, 1). */
CH_API ch_status ch_functions_dropout(ch_variable** out, ch_variable* x, double ratio,
                                      int32_t train);

/* (end of noise) */

/* ======================================================================
 * normalization: BatchNormalization, local_response_normalization
 * ====================================================================== */

/* (end of normalization) */

/* ======================================================================
 * pooling: max_pooling_2d, average_pooling_2d
 * ====================================================================== */

/* (end of pooling) */

#ifdef __cplusplus
}
#endif
#endif /* CH_FUNCTIONS_H */
