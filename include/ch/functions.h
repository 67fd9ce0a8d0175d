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

/* Convolution2D (Chainer 1.0.1): a parameterized function object for 2-D
 * convolution (correlation) of NCHW input x (batch, in_channels, h, w) with
 * filters W (out_channels, in_channels, kh, kw) plus bias b (out_channels),
 * windows shifted by the stride (sy, sx) from -pad (ph, pw), zero padding.
 * Output (batch, out_channels, (h + 2 ph - kh) / sy + 1, (w + 2 pw - kw) / sx + 1).
 * Seed defaults: stride 1, pad 0, wscale 1, bias 0, nobias false; ksize=k,
 * stride=s, pad=p of the seed are kh = kw = k, sy = sx = s, ph = pw = p.
 * Parameters (ch_function_parameter, in this order): "W", then "b" unless
 * nobias. W ~ N(0, wscale^2 / (in_channels kh kw)) and b = bias, unless
 * initial_W / initial_b (NULL = random / `bias`; borrowed, copied and
 * converted to `dtype`; shapes (out, in, kh, kw) and (out_channels,)) are given.
 * Apply it to one float variable of `dtype` with ch_function_apply; each
 * application is a new graph node sharing the parameters; backward adds to
 * the parameters' gradients (gW +=, gb +=) and gives x its gradient.
 * Errors: CH_ERR_INVALID_ARGUMENT for non-positive channels/ksize/stride or a
 * negative pad; CH_ERR_DTYPE for a non-float dtype; CH_ERR_SHAPE for a
 * wrongly shaped initial array; at apply: CH_ERR_SHAPE for x not 4-d, with
 * another channel count, or smaller than the kernel; CH_ERR_DTYPE for x of
 * another dtype.
 * *out: new reference; release with ch_function_release. */
CH_API ch_status ch_functions_convolution_2d_new(ch_function** out, int64_t in_channels,
                                                 int64_t out_channels, int64_t kh, int64_t kw,
                                                 int64_t sy, int64_t sx, int64_t ph, int64_t pw,
                                                 ch_dtype dtype, double wscale, double bias,
                                                 int32_t nobias, const ch_array* initial_W,
                                                 const ch_array* initial_b);

/* Inception (Chainer 1.0.1): GoogLeNet's module as a parameterized function
 * object. For NCHW x (batch, in_channels, h, w):
 *   y = relu(concat(conv1(x), conv3(relu(proj3(x))), conv5(relu(proj5(x))),
 *                   projp(max_pooling_2d(x, 3, stride 1, pad 1)))) on channels,
 * conv1 1x1 in -> out1; proj3 1x1 in -> proj3, conv3 3x3 pad 1 -> out3;
 * proj5 1x1 in -> proj5, conv5 5x5 pad 2 -> out5; projp 1x1 in -> proj_pool.
 * y is (batch, out1 + out3 + out5 + proj_pool, h, w). Parameters (12, in
 * this order, Chainer's FunctionSet order): "conv1/W", "conv1/b", "conv3/W",
 * "conv3/b", "conv5/W", "conv5/b", "proj3/W", "proj3/b", "proj5/W",
 * "proj5/b", "projp/W", "projp/b", each initialised as Convolution2D's
 * defaults (wscale 1, bias 0). Applied with ch_function_apply, the module is
 * one graph node (Chainer inserts its sub-graph; gradients are the same);
 * backward adds to all twelve parameter gradients. Errors:
 * CH_ERR_INVALID_ARGUMENT for a non-positive channel count, CH_ERR_DTYPE for a
 * non-float dtype; at apply: CH_ERR_SHAPE for x not 4-d or with another
 * channel count, CH_ERR_DTYPE for x of another dtype.
 * *out: new reference; release with ch_function_release. */
CH_API ch_status ch_functions_inception_new(ch_function** out, int64_t in_channels, int64_t out1,
                                            int64_t proj3, int64_t out3, int64_t proj5,
                                            int64_t out5, int64_t proj_pool, ch_dtype dtype);

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

/* local_response_normalization (Chainer 1.0.1): across channels (axis 1) of
 * x (batch, channels, ...): y = x / (k + alpha * sum_j x_j^2)^beta, j over the
 * channels i - n/2 .. i + n/2 (clipped at the edges). Seed defaults: n = 5,
 * k = 2, alpha = 1e-4, beta = 0.75. Errors: CH_ERR_SHAPE for rank < 2,
 * CH_ERR_DTYPE for a non-float x, CH_ERR_INVALID_ARGUMENT for n <= 0. */
CH_API ch_status ch_functions_local_response_normalization(ch_variable** out, ch_variable* x,
                                                           int32_t n, double k, double alpha,
                                                           double beta);

/* BatchNormalization (Chainer 1.x): a parameterized function object that
 * normalizes x (batch, size..., rest...) per feature of shape `size` (size =
 * {C} for per-channel normalization of NCHW input, {D} for (N, D) input),
 * with statistics over the batch axis and the trailing axes:
 * y = gamma (x - mean) / sqrt(var + eps) + beta.
 * Seed defaults: decay 0.9, eps 1e-5. Parameters: "gamma" (ones), "beta"
 * (zeros), shape `size`, `dtype`. Running statistics "avg_mean" and "avg_var"
 * (zeros at start; see ch_functions_batch_normalization_state) are state, not
 * parameters. Errors: CH_ERR_DTYPE for a non-float dtype;
 * CH_ERR_INVALID_ARGUMENT for an empty size, a non-positive extent or eps <= 0.
 * Applied with ch_function_apply it runs in the process default mode
 * (ch_config_set_train: train -> training mode, test -> test mode).
 * *out: new reference; release with ch_function_release. */
CH_API ch_status ch_functions_batch_normalization_new(ch_function** out, const int64_t* size,
                                                      int32_t ndim, double decay, double eps,
                                                      ch_dtype dtype);

/* Applies BatchNormalization `bn` to x in a given mode: train is CH_MODE_TRAIN,
 * CH_MODE_TEST or CH_MODE_DEFAULT (the process default); finetune != 0 is the
 * seed's finetune=True. Modes as Chainer 1.x:
 *  - training (train, not finetune): batch mean and (biased) variance;
 *    avg_mean = decay avg_mean + (1 - decay) mean, avg_var = decay avg_var +
 *    (1 - decay) m/(m-1) var (m values per feature);
 *  - test (test, not finetune): normalizes with avg_mean and avg_var + eps;
 *    backward: gx = gamma gy / sqrt(avg_var + eps);
 *  - finetune (either train flag): batch statistics; the running averages
 *    become population statistics: decay = 1 - 1/N for the N-th batch since
 *    ch_functions_batch_normalization_start_finetuning (or creation).
 * Backward adds to the gradients of gamma and beta. Errors: CH_ERR_SHAPE if x's
 * axes after the batch axis do not start with `size`; CH_ERR_DTYPE for x of
 * another dtype; CH_ERR_INVALID_ARGUMENT if bn is not a BatchNormalization.
 * *out: new reference; release with ch_variable_release. */
CH_API ch_status ch_functions_batch_normalization_apply(ch_variable** out, ch_function* bn,
                                                        ch_variable* x, int32_t train,
                                                        int32_t finetune);

/* The running statistics of `bn` (shape `size`, its dtype): the arrays
 * themselves, not copies, so writing them (e.g. when loading a checkpoint)
 * changes the statistics. Either output may be NULL (not wanted).
 * *avg_mean, *avg_var: new references; release with ch_array_release. */
CH_API ch_status ch_functions_batch_normalization_state(ch_array** avg_mean, ch_array** avg_var,
                                                        const ch_function* bn);

/* The seed's start_finetuning(): restarts the count N of finetune batches. */
CH_API ch_status ch_functions_batch_normalization_start_finetuning(ch_function* bn);

/* (end of normalization) */

/* ======================================================================
 * pooling: max_pooling_2d, average_pooling_2d
 * ====================================================================== */

/* max_pooling_2d (Chainer 1.0.1): the maximum of each (kh, kw) window of
 * every channel of NCHW x, windows shifted by (sy, sx) from -(ph, pw); padding
 * never wins. sy or sx <= 0 means the window size (the seed's stride=None).
 * cover_all != 0 (the seed's default) makes the output cover every input
 * position: extent (h + 2 ph - kh + sy - 1) / sy + 1; else (h + 2 ph - kh) / sy + 1.
 * Backward sends gy to the position of each maximum (the first in the window
 * on ties). Errors: CH_ERR_SHAPE for x not 4-d or smaller than the window,
 * CH_ERR_DTYPE for a non-float x, CH_ERR_INVALID_ARGUMENT for ksize <= 0 or
 * pad < 0. */
CH_API ch_status ch_functions_max_pooling_2d(ch_variable** out, ch_variable* x, int64_t kh,
                                             int64_t kw, int64_t sy, int64_t sx, int64_t ph,
                                             int64_t pw, int32_t cover_all);

/* average_pooling_2d (Chainer 1.0.1): the sum of each (kh, kw) window divided
 * by kh * kw (padding counts as zeros); no cover_all mode: output extent
 * (h + 2 ph - kh) / sy + 1. sy or sx <= 0 means the window size (the seed's
 * stride=None); pad defaults to 0. Errors as ch_functions_max_pooling_2d. */
CH_API ch_status ch_functions_average_pooling_2d(ch_variable** out, ch_variable* x, int64_t kh,
                                                 int64_t kw, int64_t sy, int64_t sx, int64_t ph,
                                                 int64_t pw);

/* (end of pooling) */

#ifdef __cplusplus
}
#endif
#endif /* CH_FUNCTIONS_H */
