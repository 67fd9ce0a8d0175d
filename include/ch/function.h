/*
 * chainerc — functions (ch_function): user-defined differentiable functions
 * through callbacks, and the function applications recorded in a graph.
 *
 * A ch_function made by ch_function_new is a function object, as a Chainer
 * Function instance: a name, forward/backward callbacks, user data with a
 * destructor, and optional parameters with their gradients. Applying it
 * (ch_function_apply) copies it (the seed's "copy on call"): every
 * application is a separate graph node with its own context, sharing the
 * object's user data and parameters. ch_variable_creator returns such a node,
 * also as a ch_function, which can be inspected and applied again.
 *
 * Callback contract:
 *  - Every callback returns CH_OK or a non-zero status. Before failing it may
 *    call ch_error_set() for the message and ch_error_set_payload() to carry a
 *    host error object to the caller of the failing API call.
 *  - Arrays passed to callbacks (inputs, outputs, grad_outputs) are borrowed
 *    handles valid until the callback returns (retain one to keep it); their
 *    memory is the engine's, passed without copying, and must not be written.
 *  - Forward reports its outputs with ch_context_add_output, in order.
 *    Backward reports gradients with ch_context_set_grad_input; an input whose
 *    gradient is not set gets none (not differentiable there). Gradients must
 *    have the shape and dtype of their input.
 *  - Device dispatch: for inputs on the CPU the engine calls forward_cpu if
 *    set, else forward; on a GPU, forward_gpu, else forward. Same for backward
 *    (a GPU backward when any input or output gradient is on a GPU).
 *    A missing backward makes the function non-differentiable.
 *  - GPU callbacks: ch_array_data of the arrays passed in returns DEVICE
 *    pointers (of the device ch_context_device names), usable in the host's
 *    own CUDA kernels and library calls. While a GPU callback runs, that
 *    device is the thread's current CUDA device (as after
 *    ch_cuda_device_push; restored afterwards). Queue device work on
 *    ch_context_stream(ctx), the stream chainerc's own kernels run on, so
 *    that it is ordered with them without a synchronization: the callback
 *    may return before its kernels finish. Arrays made in the callback
 *    (ch_array_new_empty, user kernels, ch_functions_*) live on that device.
 *  - Callbacks run on the thread that called the forward or backward API call.
 *
 * Threading: a function object may be applied from several threads at once
 * only if its callbacks are thread-safe; its parameters are shared.
 */
#ifndef CH_FUNCTION_H
#define CH_FUNCTION_H

#include "common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Forward: compute outputs from `inputs` (n_inputs borrowed arrays). */
typedef ch_status (*ch_forward_callback)(void* user_data, ch_context* ctx,
                                         ch_array* const* inputs, size_t n_inputs);
/* Backward: compute input gradients from inputs, outputs and grad_outputs (one
 * per output; zeros where no gradient flowed back). */
typedef ch_status (*ch_backward_callback)(void* user_data, ch_context* ctx,
                                          ch_array* const* inputs, size_t n_inputs,
                                          ch_array* const* outputs, size_t n_outputs,
                                          ch_array* const* grad_outputs, size_t n_grad_outputs);

/* Graph backward (double backprop): compute the input gradients from the
 * input variables, the output variables and the output gradients (one per
 * output; constants of zeros where no gradient flowed) by applying
 * functions (ch_functions_*, other user functions) to them, and write one
 * new reference (or NULL for no gradient) per input to grad_inputs[0..
 * n_inputs) (all NULL on entry; the engine takes the references, also when
 * the callback fails). The variables passed are borrowed for the call.
 * Called only by double-backprop passes (ch_variable_backward_ex with
 * enable_double_backprop, ch_grad with it) with function recording on, and
 * by ch_grad for nothing else. Arrays saved in forward (ch_context_saved)
 * and ch_context_needs_input_grad work as in backward. */
typedef ch_status (*ch_graph_backward_callback)(void* user_data, ch_context* ctx,
                                                ch_variable* const* inputs, size_t n_inputs,
                                                ch_variable* const* outputs, size_t n_outputs,
                                                ch_variable* const* grad_outputs,
                                                size_t n_grad_outputs,
                                                ch_variable** grad_inputs);

/* Version 2 appends graph_backward; a version-1 definition (a struct that
 * ends before it) is read as such. */
#define CH_FUNCTION_DEF_VERSION 2

/* Everything that defines a function. Unused callbacks are NULL. */
typedef struct ch_function_def {
  uint32_t version; /* CH_FUNCTION_DEF_VERSION */
  const char* name; /* copied; used in error messages and graph inspection */
  ch_forward_callback forward;
  ch_backward_callback backward;
  ch_forward_callback forward_cpu;
  ch_backward_callback backward_cpu;
  ch_forward_callback forward_gpu;
  ch_backward_callback backward_gpu;
  void* user_data;                     /* passed to every callback */
  void (*destroy)(void* user_data);    /* called once, when the object and
                                          every application of it are gone */
  /* Version 2. Optional: makes the function twice differentiable. Without
   * it a double-backprop pass through the function fails with CH_ERR_GRAPH
   * naming it. */
  ch_graph_backward_callback graph_backward;
} ch_function_def;

/* New function object from `def` (copied). At least one forward is required.
 * On failure def->destroy is NOT called. *out: new reference; release with
 * ch_function_release. */
CH_API ch_status ch_function_new(ch_function** out, const ch_function_def* def);

CH_API ch_function* ch_function_retain(ch_function* function);
/* Drop a reference. NULL is a no-op. */
CH_API ch_status ch_function_release(ch_function* function);

/* Apply the function to `inputs` (all volatile or all not; CH_ERR_GRAPH
 * otherwise). Writes the first `capacity` outputs to `outputs` and the number
 * of outputs the forward produced to *n_outputs (may be NULL); outputs past
 * `capacity` are not returned. outputs[i]: new references; release with
 * ch_variable_release. */
CH_API ch_status ch_function_apply(ch_function* function, ch_variable* const* inputs,
                                   size_t n_inputs, ch_variable** outputs, size_t capacity,
                                   size_t* n_outputs);

/* Run the forward computation of a function application (a variable's
 * creator) or a user function object on plain arrays, recording nothing (the
 * seed's `func = y.creator; func.forward((x.data,))`, e.g. inside
 * ch_numerical_grad). A built-in application takes as many inputs as it was
 * applied to; a user function runs its forward callback on a fresh
 * application. The graph the application belongs to stays usable: a built-in
 * node whose backward can still run recomputes what it keeps for backward
 * from its own inputs' current data after computing these outputs (unless
 * `inputs` are exactly those arrays), so backward afterwards is backward of
 * a forward on the inputs' data as it is now. Refused with CH_ERR_GRAPH for
 * a live Dropout node (a new mask would change its backward) and for a live
 * node whose input data was released. BatchNormalization in training mode
 * moves its running averages at each call, as in Chainer.
 * Writes the first `capacity` outputs to `outputs` and the number produced
 * to *n_outputs (may be NULL). outputs[i]: new references; release with
 * ch_array_release. */
CH_API ch_status ch_function_forward(ch_function* function, ch_array* const* inputs,
                                     size_t n_inputs, ch_array** outputs, size_t capacity,
                                     size_t* n_outputs);

/* Name, e.g. "MulAdd" or a built-in's "Exp". Borrowed; valid while the
 * function is alive. "" for an invalid handle. */
CH_API const char* ch_function_name(const ch_function* function);

/* Graph inspection of an application (empty for an unapplied object). */
CH_API size_t ch_function_input_count(const ch_function* function);
CH_API size_t ch_function_output_count(const ch_function* function);
/* Input variable i. *out: new reference or NULL once unchained. Its data
 * may have been released (see ch/variable.h). */
CH_API ch_status ch_function_input(ch_variable** out, const ch_function* function, size_t index);
/* Output variable i, or NULL if it has been freed. *out: new reference. */
CH_API ch_status ch_function_output(ch_variable** out, const ch_function* function,
                                    size_t index);
/* Remove this application from the graph (the seed's Function.unchain). */
CH_API ch_status ch_function_unchain(ch_function* function);

/* --- parameters (the seed's parameter_names / gradient_names) ----------- */

/* Give the function object a parameter array and its gradient array (same
 * shape and dtype), both shared, not copied. The backward callback updates
 * the gradient in place; optimizers update the parameter in place. */
CH_API ch_status ch_function_add_parameter(ch_function* function, const char* name,
                                           ch_array* param, ch_array* grad);
CH_API size_t ch_function_parameter_count(const ch_function* function);
/* Parameter i, its gradient and its name. Each out may be NULL.
 * *param, *grad: new references. *name: borrowed; valid while the function is. */
CH_API ch_status ch_function_parameter(ch_array** param, ch_array** grad, const char** name,
                                       const ch_function* function, size_t index);

/* --- per-application context, for callbacks ----------------------------- */
/* A context is borrowed: valid only during the callback it was passed to. */

/* Forward only: append an output (retained; the caller keeps its reference). */
CH_API ch_status ch_context_add_output(ch_context* ctx, ch_array* output);
/* Backward only: the gradient of input `index` (retained; the caller keeps its
 * reference). Must match the input's shape and dtype. */
CH_API ch_status ch_context_set_grad_input(ch_context* ctx, size_t index, ch_array* grad);
/* Keep an array from forward to backward (retained). Keeping an output
 * creates no reference cycle: arrays do not reference the graph. */
CH_API ch_status ch_context_save(ch_context* ctx, ch_array* array);
CH_API size_t ch_context_saved_count(const ch_context* ctx);
/* Saved array i. *out: new reference. */
CH_API ch_status ch_context_saved(ch_array** out, const ch_context* ctx, size_t index);
/* Per-application host data, destroyed (destroy may be NULL) with the
 * application. Replacing it destroys the previous one. */
CH_API ch_status ch_context_set_user_data(ch_context* ctx, void* data, void (*destroy)(void*));
/* NULL if none or for an invalid context. */
CH_API void* ch_context_user_data(const ch_context* ctx);
/* Backward: 0 when input `index` needs no gradient (its variable does not
 * require one, ch_variable_set_requires_grad), so the callback may skip
 * computing it; 1 otherwise (also outside backward or for a bad context). */
CH_API int32_t ch_context_needs_input_grad(const ch_context* ctx, size_t index);
/* The function object being applied. *out: new reference. */
CH_API ch_status ch_context_function(ch_function** out, const ch_context* ctx);
/* The device a user function's forward or backward callback runs for: the
 * device of its first input (or, in backward, output gradient) not on the
 * CPU, or the CPU (also for ch_numerical_grad's evaluation callback). {0, 0}
 * for an invalid context. Cannot fail. */
CH_API ch_device ch_context_device(const ch_context* ctx);
/* The CUDA stream (a cudaStream_t) a GPU callback queues its work on: the
 * stream chainerc's own kernels of this device use (the device's engine
 * stream, non-blocking: it does not wait for CUDA's legacy default stream, so
 * work queued on NULL instead is NOT ordered with chainerc's). Pass it to
 * cudaMemcpyAsync / kernel launches / cublasSetStream. NULL for a CPU
 * callback or an invalid context. Borrowed; valid for the life of the
 * process. Cannot fail. */
CH_API void* ch_context_stream(const ch_context* ctx);

#ifdef __cplusplus
}
#endif
#endif /* CH_FUNCTION_H */
