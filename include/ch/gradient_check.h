/*
 * chainerc — gradient checking (the seed's chainer.gradient_check), callable
 * through the ABI so that a function written in any language can be checked
 * with the engine itself.
 */
#ifndef CH_GRADIENT_CHECK_H
#define CH_GRADIENT_CHECK_H

#include "common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Evaluates the function under test on the current contents of the input
 * arrays given to ch_numerical_grad, reporting each output with
 * ch_context_add_output. */
typedef ch_status (*ch_eval_callback)(void* user_data, ch_context* ctx);

/* Numerical gradients by central differences, as Chainer's numerical_grad:
 * each element of each input is moved by +eps and -eps in place (and
 * restored), `f` is evaluated, and grad = sum(grad_outputs * (f+ - f-)) / 2eps.
 * Inputs must be float32 or float64, on any device (an element of a GPU
 * array is moved with a copy: slow, meant for small test inputs); each
 * gradient is on its input's device. grad_outputs: one per output of f. Writes n_inputs new references to `out` (each: release with
 * ch_array_release). */
CH_API ch_status ch_numerical_grad(ch_array** out, ch_eval_callback f, void* user_data,
                                   ch_array* const* inputs, size_t n_inputs,
                                   ch_array* const* grad_outputs, size_t n_grad_outputs,
                                   double eps);

/* Where two arrays differ most, filled by ch_allclose. */
typedef struct ch_allclose_report {
  int64_t worst_index; /* flat index of the element with the largest excess */
  double actual;       /* a[worst_index] */
  double expected;     /* b[worst_index] */
  double abs_diff;     /* |actual - expected| */
  double tolerance;    /* atol + rtol * |expected| */
} ch_allclose_report;

/* CH_OK if |a - b| <= atol + rtol * |b| everywhere (numpy.allclose), else
 * CH_ERR_NOT_CLOSE with a message naming the worst element. Shapes must be
 * equal. `report` may be NULL; it is filled either way. */
CH_API ch_status ch_allclose(const ch_array* a, const ch_array* b, double atol, double rtol,
                             ch_allclose_report* report);

/* Check a function's backward against numerical gradients, as Chainer's
 * check_backward: apply `function` to variables made from copies of
 * `inputs`, back-propagate `grad_outputs` (one per output; NULL entries or a
 * NULL list mean ones), and compare each input's gradient with ch_numerical_grad
 * under (atol, rtol). int32 inputs are not checked. CH_ERR_NOT_CLOSE names the
 * input and the worst element. */
CH_API ch_status ch_check_backward(ch_function* function, ch_array* const* inputs,
                                   size_t n_inputs, ch_array* const* grad_outputs,
                                   size_t n_grad_outputs, double eps, double atol, double rtol);

/* A graph to check: build outputs from `inputs` with any functions, writing
 * n_outputs new references to `outputs` (the engine releases them). */
typedef ch_status (*ch_graph_callback)(void* user_data, ch_variable* const* inputs,
                                       size_t n_inputs, ch_variable** outputs, size_t n_outputs);

/* As ch_check_backward, for a graph built by a callback; the number of outputs
 * is n_grad_outputs (grad_outputs may hold NULLs meaning ones, but the list
 * itself is required). */
CH_API ch_status ch_check_backward_graph(ch_graph_callback build, void* user_data,
                                         ch_array* const* inputs, size_t n_inputs,
                                         ch_array* const* grad_outputs, size_t n_grad_outputs,
                                         double eps, double atol, double rtol);


/* Chainer's gradient_check.check_double_backward: checks the second
 * derivative of the graph built by `build` (n_grad_outputs outputs from
 * n_inputs inputs). The first backward, taken with enable_double_backprop
 * (ch_grad), is first checked against numerical gradients of `build` (so a
 * graph backward that disagrees with the function is caught), then seen as
 * a function of the inputs and the output gradients, (x, gy) -> gx, whose
 * backward is checked against numerical gradients of that function, with grad_grad_inputs (NULL, or n_inputs arrays whose
 * entries may be NULL; NULL means ones) as the gradients of gx.
 * grad_outputs: as for ch_check_backward_graph (the list is required; NULL
 * entries mean ones). Use float64 inputs: second differences in float32 are
 * noise. CH_ERR_NOT_CLOSE names the input (the inputs come first, then the
 * output gradients) and the worst element; CH_ERR_GRAPH names a function
 * without a graph backward. Nothing is retained past the call. */
CH_API ch_status ch_check_double_backward(ch_graph_callback build, void* user_data,
                                          ch_array* const* inputs, size_t n_inputs,
                                          ch_array* const* grad_outputs, size_t n_grad_outputs,
                                          ch_array* const* grad_grad_inputs,
                                          size_t n_grad_grad_inputs, double eps, double atol,
                                          double rtol);

#ifdef __cplusplus
}
#endif
#endif /* CH_GRADIENT_CHECK_H */
