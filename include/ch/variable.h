/*
 * chainerc — variables (ch_variable): an array with the history of the
 * computation that produced it.
 *
 * A variable made by the user is a root. A variable returned by a function
 * holds a reference to that function application (its creator), which holds
 * references to its input variables: the graph lives as long as some output
 * variable does and is freed as soon as nothing references it. Backward and
 * graph destruction are iterative, so graphs of any depth are safe.
 *
 * Released data (as Chainer v2's retained inputs): when the last handle to a
 * variable made by a function goes, and every function that consumes it
 * says its backward does not need its data (relu, sigmoid, tanh, exp,
 * dropout, identity, reshape, sum, concat, the poolings, and
 * softmax_cross_entropy's x keep what they need themselves), the variable
 * lets go of its data at once, so intermediate arrays are freed during
 * forward. relu goes further: a large output (64 KiB or more, host memory)
 * is computed when first read, and where its input's data was let go by
 * then, over the input's memory, which it takes over. Backward is
 * unaffected. A handle to such a variable found later
 * through ch_function_input / ch_function_output still gives its shape,
 * dtype, gradient and creator, but ch_variable_data fails with CH_ERR_GRAPH
 * and applying a function to it fails too: keep a handle to any variable
 * whose data you want to read later.
 *
 * Threading: handles may be retained and released from any thread (finalizer
 * threads included). A graph — variables connected through functions — must
 * not be used (forward, backward, unchain, setting data or grad) from two
 * threads at the same time. Backward runs all callbacks on the calling thread.
 */
#ifndef CH_VARIABLE_H
#define CH_VARIABLE_H

#include "common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* New root variable holding `data` (shared, not copied). A volatile variable
 * records no history: functions applied to it return volatile variables with
 * no creator. *out: new reference; release with ch_variable_release. */
CH_API ch_status ch_variable_new(ch_variable** out, ch_array* data, int32_t is_volatile);

CH_API ch_variable* ch_variable_retain(ch_variable* variable);
/* Drop a reference. NULL is a no-op. The graph behind it is freed when no
 * other variable references it. */
CH_API ch_status ch_variable_release(ch_variable* variable);

/* The data array. *out: new reference; release with ch_array_release.
 * CH_ERR_GRAPH if the data was released (see above). */
CH_API ch_status ch_variable_data(ch_array** out, const ch_variable* variable);
/* Replace the data array (same shape and dtype are not required; the next
 * backward uses the new data). `data` is shared, not copied. */
CH_API ch_status ch_variable_set_data(ch_variable* variable, ch_array* data);

/* The gradient, or *out = NULL when there is none (before backward reaches
 * it, or after it was freed). *out: new reference or NULL. */
CH_API ch_status ch_variable_grad(ch_array** out, const ch_variable* variable);
/* Set the gradient, e.g. the initial error before backward. It must have the
 * data's shape and dtype (CH_ERR_SHAPE, CH_ERR_DTYPE, CH_ERR_DEVICE otherwise).
 * NULL clears it. `grad` is shared, not copied. */
CH_API ch_status ch_variable_set_grad(ch_variable* variable, ch_array* grad);

/* The function application that created this variable, or *out = NULL for a
 * root. *out: new reference (release with ch_function_release) or NULL. */
CH_API ch_status ch_variable_creator(ch_function** out, const ch_variable* variable);

/* Getters; they return 0 for an invalid handle. */
CH_API int32_t ch_variable_is_volatile(const ch_variable* variable);
/* Whether backward computes a gradient for this variable (Chainer v2's
 * requires_grad; default 1). Set it to 0 on inputs such as training data:
 * backward then neither stores their gradient nor lets functions compute it
 * (Linear and Convolution2D skip the input-gradient product). An output of
 * a function requires a gradient when any of its inputs does. 0 for an
 * invalid handle. */
CH_API ch_status ch_variable_set_requires_grad(ch_variable* variable, int32_t requires_grad);
CH_API int32_t ch_variable_requires_grad(const ch_variable* variable);
/* Number of elements of the data (Chainer's len()). */
CH_API int64_t ch_variable_size(const ch_variable* variable);

/* Error backpropagation from this variable. Its grad is the initial error; if
 * it has none and the data has one element, ones are used; otherwise this is
 * CH_ERR_GRAPH. Gradients of every variable reached are computed; where a
 * variable feeds several functions the gradients are summed. Each backward
 * call starts the gradients afresh (Chainer 1.0 semantics): a root's grad
 * holds the gradient of this backward, not a sum over calls. Unless
 * retain_grad is non-zero, the grads of intermediate variables are freed as
 * soon as they have been used (an intermediate's grad is its creator's to
 * use up: relu, leaky_relu, sigmoid and tanh write their input's gradient
 * over it where nothing else shares it, so it reads as none during that
 * backward too). Callable again after the same forward.
 * If a function's backward fails, the error names the function and the phase
 * and the graph stays usable. */
CH_API ch_status ch_variable_backward(ch_variable* variable, int32_t retain_grad);

/* Delete the backward references of this variable and of every variable and
 * function before it: this variable becomes a root and later backward calls
 * stop here (truncated BPTT). */
CH_API ch_status ch_variable_unchain_backward(ch_variable* variable);

/* --- the graph as a picture (Chainer's computational_graph) ------------- */

#define CH_GRAPH_DOT_OPTIONS_VERSION 1

/* Options of ch_variable_graph_dot. Zero-initialised fields (with version
 * set) give the defaults. */
typedef struct ch_graph_dot_options {
  uint32_t version;                /* CH_GRAPH_DOT_OPTIONS_VERSION */
  int32_t hide_parameters;         /* non-zero: no nodes for function parameters (W, b) */
  const char* rankdir;             /* Graphviz rankdir "TB" (NULL), "BT", "LR" or "RL"; copied */
  const char* const* output_names; /* NULL, or n_outputs labels (an entry may be
                                      NULL) shown on the output variables; copied */
} ch_graph_dot_options;

/* The computational graph behind `outputs` (n_outputs >= 1 variables) as
 * Graphviz DOT text, as Chainer's build_computational_graph: every variable
 * reached backwards from the outputs through creators and their inputs is an
 * oval labelled "(shape), dtype" (with its name first where it has one), every
 * function application a box labelled with its name ("Linear", "ReLU"),
 * edges run input -> function -> output; function parameters are ovals named
 * as the function names them ("W", "b") with an edge into the function.
 * Nodes are numbered v0.., f0.., p0.. in the order the walk finds them, so the
 * text is the same for the same graph. Render it with `dot -Tpng`.
 * `options` may be NULL (defaults). Nothing in the graph changes.
 * *out: a new NUL-terminated string; free it with ch_string_free. */
CH_API ch_status ch_variable_graph_dot(char** out, ch_variable* const* outputs, size_t n_outputs,
                                       const ch_graph_dot_options* options);

/* Free a string the library allocated for the caller (ch_variable_graph_dot).
 * NULL is a no-op. */
CH_API void ch_string_free(char* s);


/* --- double backprop (gradients of gradients; Chainer 3+) --------------- */

#define CH_BACKWARD_OPTIONS_VERSION 1
/* Options of ch_variable_backward_ex and ch_grad. Initialise with
 * CH_BACKWARD_OPTIONS_INIT (fields added later get their default there). */
typedef struct ch_backward_options {
  uint32_t version;               /* CH_BACKWARD_OPTIONS_VERSION */
  int32_t retain_grad;            /* non-zero: keep intermediate variables' grads */
  int32_t enable_double_backprop; /* non-zero: gradients are variables with a graph
                                     (ch_variable_grad_var), differentiable again */
} ch_backward_options;
#define CH_BACKWARD_OPTIONS_INIT {CH_BACKWARD_OPTIONS_VERSION, 0, 0}

/* ch_variable_backward with options (NULL: the defaults, which is exactly
 * ch_variable_backward(variable, 0)). With enable_double_backprop each
 * function's backward runs as a composition of differentiable functions,
 * recorded as a graph: the grads of the roots reached are then variables,
 * read with ch_variable_grad_var, whose own backward gives second
 * derivatives (Chainer's backward(enable_double_backprop=True), PyTorch's
 * create_graph=True). Without it no graph is recorded and the same kernels
 * run as in ch_variable_backward. A function without a graph backward (a
 * user function defined without ch_function_def.graph_backward; among the
 * built-ins: lstm, convolution_2d, the poolings, batch and local response
 * normalization, embed_id, prelu, hierarchical softmax, inception) makes a double-backprop pass fail with CH_ERR_GRAPH
 * naming it; no gradient is silently dropped.
 * A root's grad_var holds the gradient's graph, which may reference the
 * root itself: clear it (ch_variable_set_grad(x, NULL)) when done, or that
 * graph lives as long as the root. Parameters of function objects
 * (Linear's W, b) get their gradients as arrays, as in ch_variable_backward
 * (the second pass of a gradient penalty reaches them; a gradient of a
 * parameter's gradient is not available: use variables and matmul). */
CH_API ch_status ch_variable_backward_ex(ch_variable* variable,
                                         const ch_backward_options* options);
/* The gradient as a variable (Chainer's grad_var): after a double-backprop
 * pass, the variable with the gradient's graph; otherwise a new root holding
 * the grad array; *out = NULL when there is no grad. *out: new reference or
 * NULL; release with ch_variable_release. */
CH_API ch_status ch_variable_grad_var(ch_variable** out, const ch_variable* variable);
/* Chainer's chainer.grad: the gradients of `outputs` (n_outputs) with respect
 * to `inputs` (n_inputs), written to out[0..n_inputs) as new variables;
 * out[i] = NULL where no gradient reaches input i. grad_outputs: NULL, or
 * n_outputs variables (borrowed; an entry may be NULL) seeding each output:
 * a NULL seed means the output's grad, or ones for a one-element output.
 * No grad field of any variable and no parameter gradient changes; only
 * the part of the graph between inputs and outputs is visited. With
 * options->enable_double_backprop the results carry graphs (differentiate
 * them again: gradient penalties, Hessian-vector products); without it they
 * are roots. With options->retain_grad, the intermediate variables' grads
 * are set, as Chainer does. options may be NULL (defaults).
 * out[i]: new references or NULL; release each with ch_variable_release. */
CH_API ch_status ch_grad(ch_variable** out, ch_variable* const* outputs, size_t n_outputs,
                         ch_variable* const* inputs, size_t n_inputs,
                         ch_variable* const* grad_outputs, const ch_backward_options* options);
/* Whether applying functions records graph nodes (Chainer's
 * config.enable_backprop). Process-wide switch, default 1; scopes opened with
 * ch_backprop_mode_push on a thread take precedence on that thread. With
 * recording off, functions return variables with no creator (as volatile
 * inputs do, without the variables being volatile). Cannot fail. */
CH_API void ch_config_set_enable_backprop(int32_t enable);
CH_API int32_t ch_config_enable_backprop(void);
/* Open a scope on the calling thread in which recording is `enable` (0:
 * Chainer's no_backprop_mode, 1: force_backprop_mode), until the matching
 * ch_backprop_mode_pop on the same thread. Scopes nest. */
CH_API ch_status ch_backprop_mode_push(int32_t enable);
/* Close the innermost scope of this thread. CH_ERR_GRAPH when none is open. */
CH_API ch_status ch_backprop_mode_pop(void);
/* Whether recording is on for the calling thread now (scope, else switch).
 * Cannot fail. */
CH_API int32_t ch_backprop_mode_enabled(void);

#ifdef __cplusplus
}
#endif
#endif /* CH_VARIABLE_H */
