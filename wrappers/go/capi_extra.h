/* Hand-written cgo helpers: callbacks into Go and calls whose results do not
 * fit gres. Go handles (runtime/cgo.Handle) travel as uintptr_t; C never
 * keeps a Go pointer. */
#ifndef CHAINERC_GO_CAPI_EXTRA_H
#define CHAINERC_GO_CAPI_EXTRA_H
#include <stdint.h>
#include "capi_gen.h"

enum { GCH_HAS_FORWARD_CPU = 1, GCH_HAS_FORWARD_GPU = 2, GCH_HAS_BACKWARD_CPU = 4,
       GCH_HAS_BACKWARD_GPU = 8, GCH_HAS_BACKWARD_GRAPH = 16 };

/* ch_function_new with Go callbacks; `handle` is the cgo.Handle of the Go
 * implementation, deleted by the destroy callback. */
gres gch_function_new(const char* name, uintptr_t handle, int flags);
/* Apply and return the first output in gres.out (n outputs in gres.d). */
gres gch_apply1(ch_function* f, ch_variable* const* inputs, size_t n);
/* Record a callback failure with a Go error handle as payload (0: none). */
void gch_fail(ch_status status, const char* message, uintptr_t handle);
gres gch_check_backward_graph(uintptr_t handle, ch_array* const* inputs, size_t n_inputs,
                              ch_array* const* grad_outputs, size_t n_grad_outputs, double eps,
                              double atol, double rtol);
gres gch_check_double_backward(uintptr_t handle, ch_array* const* inputs, size_t n_inputs,
                               ch_array* const* grad_outputs, size_t n_grad_outputs,
                               ch_array* const* grad_grad_inputs, size_t n_grad_grad_inputs,
                               double eps, double atol, double rtol);
gres gch_numerical_grad(ch_array** out, uintptr_t handle, ch_array* const* inputs, size_t n_inputs,
                        ch_array* const* grad_outputs, size_t n_grad_outputs, double eps);
/* ch_optimizer_new with Go callbacks (handle: the Go OptimizerImpl). */
gres gch_optimizer_new(const char* name, uintptr_t handle, size_t n_states,
                       const char* const* state_names);
/* Report a callback's results in one cgo call: forward outputs
 * (gch_add_outputs) or input gradients (gch_set_grads, NULL entries skipped),
 * then release the handles flagged in `release` (whatever happened). */
gres gch_add_outputs(ch_context* ctx, ch_array* const* arrays, size_t n, const uint8_t* release);
gres gch_set_grads(ch_context* ctx, ch_array* const* arrays, size_t n, const uint8_t* release);
/* A new CPU array of a's dtype and shape: uninitialized (empty != 0) or
 * filled with `value`. */
gres gch_array_new_like(const ch_array* a, int empty, double value);
/* Everything View and Shape need, in one cgo call. */
typedef struct gch_info {
  void* data;
  const int64_t* shape;
  int64_t size;
  int32_t dtype;
  int32_t ndim;
  int32_t device_type;
} gch_info;
gch_info gch_array_info(const ch_array* a);
/* Turn a taken payload back into a handle (0 if it is not one of ours). */
uintptr_t gch_payload_handle(void* payload);
void gch_payload_destroy(void* payload);
#endif
