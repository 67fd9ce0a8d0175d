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

/* BinaryHierarchicalSoftmax(in_size, tree) (the seed's
 * chainer.functions.BinaryHierarchicalSoftmax): hierarchical softmax over the
 * words at the leaves of a binary tree.
 *
 * The tree is given flat: n_internal internal nodes, `tree` holds 2 *
 * n_internal child codes (read during the call, not kept): tree[2k] and
 * tree[2k + 1] are the left and right child of internal node k, where a code
 * c >= 0 is internal node c and c < 0 is the leaf of word id -c - 1 (word w
 * is encoded -(w + 1)). Node 0 is the root; every other node must have exactly
 * one parent; each word may appear once. Row k of the parameter "W"
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
