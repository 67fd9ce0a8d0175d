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

/* ======================================================================
 * math: arithmetic, pow, exp, log, sum, matmul
 * ====================================================================== */

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
 * array: reshape, identity, broadcast_to, transpose, concat, copy
 * ====================================================================== */

/* Same data, another shape of the same size; one extent may be -1 (inferred).
 * Any dtype. */
CH_API ch_status ch_functions_reshape(ch_variable** out, ch_variable* x, const int64_t* shape,
                                      int32_t ndim);
/* Returns its input's data as a new variable; gradient passes through. Any dtype. */
CH_API ch_status ch_functions_identity(ch_variable** out, ch_variable* x);
/* Broadcast to `shape` by NumPy's rules; backward sums over broadcast axes. */
CH_API ch_status ch_functions_broadcast_to(ch_variable** out, ch_variable* x,
                                           const int64_t* shape, int32_t ndim);
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
/* Copy x to the device `dst` (Chainer's copy): CPU to CUDA, CUDA to CPU or
 * between CUDA devices. A CUDA device that does not exist (no GPU, driver or
 * CUDA backend), an unknown device type or index is CH_ERR_DEVICE. The
 * gradient is copied back to x's device. */
CH_API ch_status ch_functions_copy(ch_variable** out, ch_variable* x, ch_device dst);

/* (end of array) */

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
/* Long Short-Term Memory units as an activation function (the seed's
 * chainer.functions.lstm): c_prev (N, U, ...) is the previous cell state (zeros
 * or the c of the previous call), x (N, 4U, ...) the incoming signal. The gates
 * a, i, f, o are taken from x INTERLEAVED along axis 1, as Chainer 1.0.1 does
 * (x.reshape(N, U, 4, ...)): a = x[:, 0::4], i = x[:, 1::4], f = x[:, 2::4],
 * o = x[:, 3::4]. Then c = tanh(a) sigmoid(i) + c_prev sigmoid(f) and
 * h = tanh(c) sigmoid(o), both of c_prev's shape. Differentiable in c_prev and
 * x through either or both outputs.
 * *c, *h: new references; release each with ch_variable_release (both NULL
 * on failure). */
CH_API ch_status ch_functions_lstm(ch_variable** c, ch_variable** h, ch_variable* c_prev,
                                   ch_variable* x);

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
/* EmbedID(in_size, out_size) (the seed's chainer.functions.EmbedID): a
 * function object holding the parameter "W" (in_size, out_size) of `dtype`
 * (CH_FLOAT32 or CH_FLOAT64), initialised with N(0, 1) samples as Chainer 1.0.1
 * (initial_W NULL) or copied from initial_W (same dtype and shape); its
 * gradient starts at zeros. Apply it with ch_function_apply to one int32
 * variable of ids of any shape S: the output has shape S + (out_size,) and
 * output[s, :] = W[ids[s], :]. An id outside [0, in_size) is
 * CH_ERR_INVALID_ARGUMENT naming the id and its position. Backward adds gy
 * rows into W's gradient (gW[ids[s]] += gy[s]); the ids get no gradient.
 * Parameters: ch_function_parameter_count / ch_function_parameter.
 * *out: new reference; release with ch_function_release. */
CH_API ch_status ch_functions_embed_id_new(ch_function** out, int64_t in_size, int64_t out_size,
                                           ch_dtype dtype, const ch_array* initial_W);

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
/* BinaryHierarchicalSoftmax(in_size, tree) (the seed's
 * chainer.functions.BinaryHierarchicalSoftmax): hierarchical softmax over the
 * words at the leaves of a binary tree.
 *
 * The tree is given flat: n_internal internal nodes, `tree` holds 2 *
 * n_internal child codes (read during the call, not kept): tree[2k] and
 * tree[2k + 1] are the left and right child of internal node k, where a code
 * c >= 0 is internal node c and c < 0 is the leaf of word id -c - 1 (word w
 * is encoded -(w + 1)). Node 0 is the root; every other node must have exactly
 * one parent; each word may appear once. The op keeps a table entry per word
 * id up to the largest, so ids must be below max(2^20, 64 * (n_internal + 1))
 * (CH_ERR_INVALID_ARGUMENT naming the id otherwise). Row k of the parameter "W"
 * (n_internal, in_size) belongs to internal node k. Chainer numbers internal
 * nodes in pre-order (node, left subtree, right subtree): a wrapper that maps
 * a nested pair like ((0, 1), 2) in that order gets Chainer's numbering, e.g.
 * ((0, 1), 2) -> {1, -3, -1, -2} (node 0 = (node 1, word 2), node 1 = (word 0,
 * word 1)).
 *
 * W is initialised with U(-1, 1) samples as Chainer 1.0.1 (initial_W NULL) or
 * copied from initial_W (dtype and shape (n_internal, in_size)); its gradient
 * starts at zeros. Apply with ch_function_apply to x (N, in_size) of `dtype`
 * and int32 labels t (N,): the output is the 0-d sum over the batch of
 * -log P(t_n | x_n), P(w | x) = prod over w's path of sigmoid(b x . W[e]),
 * b = +1 where the path goes left and -1 where it goes right (Chainer's
 * TreeParser). A label that is not a word of the tree is
 * CH_ERR_INVALID_ARGUMENT naming it and its position. Backward gives the
 * gradient of x and adds into W's gradient; t gets none.
 * *out: new reference; release with ch_function_release. */
CH_API ch_status ch_functions_binary_hierarchical_softmax_new(ch_function** out, int64_t in_size,
                                                              const int32_t* tree,
                                                              int64_t n_internal, ch_dtype dtype,
                                                              const ch_array* initial_W);

/* Chainer's BinaryHierarchicalSoftmax.create_huffman_tree for the words
 * 0 .. n_words-1 with counts[w] (n_words >= 2; no NaN): repeatedly merges the
 * two entries of least (count, id), the first as the left child, the merged
 * entry taking the smaller id, as Chainer does with a dict in word-id order.
 * Writes the tree in the encoding above, with internal nodes numbered in
 * pre-order (as Chainer), to tree[0 .. 2 * (n_words - 1)); n_internal is
 * n_words - 1. capacity: entries available at `tree` (caller-owned). */
CH_API ch_status ch_functions_binary_hierarchical_softmax_create_huffman_tree(int32_t* tree,
                                                                              int64_t capacity,
                                                                              const double* counts,
                                                                              int64_t n_words);

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
 * changes the statistics. They live on the device of bn's parameters: after
 * ch_function_set_to_gpu / to_cpu moved those, the next application moves
 * them there (new arrays; earlier handles keep the old ones). Either output
 * may be NULL (not wanted).
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
