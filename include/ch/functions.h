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

/* (end of activation) */

/* ======================================================================
 * connection: Linear, Convolution2D, EmbedID, Parameter, Inception
 * ====================================================================== */

/* (end of connection) */

/* ======================================================================
 * array: transpose, concat, copy
 * ====================================================================== */

/* (end of array) */

/* ======================================================================
 * math: matmul
 * ====================================================================== */

/* (end of math) */

/* ======================================================================
 * loss: softmax_cross_entropy, mean_squared_error, BinaryHierarchicalSoftmax
 * ====================================================================== */

/* (end of loss) */

/* ======================================================================
 * evaluation: accuracy
 * ====================================================================== */

/* (end of evaluation) */

/* ======================================================================
 * noise: dropout
 * ====================================================================== */

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
