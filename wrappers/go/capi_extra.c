#include "capi_extra.h"

#include <stdlib.h>
#include <string.h>

#include "_cgo_export.h"

/* Payloads are small heap boxes tagged with a magic number, so that a payload
 * set by another host in the same process is never mistaken for a Go handle. */
typedef struct gch_payload {
  uint64_t magic;
  uintptr_t handle;
} gch_payload;
static const uint64_t GCH_MAGIC = 0x676f2d6368616963ull; /* "go-chaic" */

void gch_payload_destroy(void* p) {
  gch_payload* b = (gch_payload*)p;
  if (!b) return;
  if (b->magic == GCH_MAGIC) chainercGoDeleteHandle(b->handle);
  free(b);
}

uintptr_t gch_payload_handle(void* p) {
  gch_payload* b = (gch_payload*)p;
  if (!b || b->magic != GCH_MAGIC) return 0;
  uintptr_t h = b->handle;
  free(b);
  return h;
}

void gch_fail(ch_status status, const char* message, uintptr_t handle) {
  ch_error_set(status, message);
  if (handle) {
    gch_payload* b = (gch_payload*)malloc(sizeof *b);
    if (!b) {
      chainercGoDeleteHandle(handle);
      return;
    }
    b->magic = GCH_MAGIC;
    b->handle = handle;
    ch_error_set_payload(b, gch_payload_destroy);
  }
}

static ch_status fwd(void* u, ch_context* c, ch_array* const* in, size_t n, int which) {
  return chainercGoForward((uintptr_t)u, which, c, (ch_array**)in, n);
}
static ch_status fwd_any(void* u, ch_context* c, ch_array* const* in, size_t n) {
  return fwd(u, c, in, n, 0);
}
static ch_status fwd_cpu(void* u, ch_context* c, ch_array* const* in, size_t n) {
  return fwd(u, c, in, n, 1);
}
static ch_status fwd_gpu(void* u, ch_context* c, ch_array* const* in, size_t n) {
  return fwd(u, c, in, n, 2);
}
static ch_status bwd(void* u, ch_context* c, ch_array* const* in, size_t n_in,
                     ch_array* const* out, size_t n_out, ch_array* const* g, size_t n_g,
                     int which) {
  return chainercGoBackward((uintptr_t)u, which, c, (ch_array**)in, n_in, (ch_array**)out, n_out,
                            (ch_array**)g, n_g);
}
static ch_status bwd_any(void* u, ch_context* c, ch_array* const* in, size_t n_in,
                         ch_array* const* out, size_t n_out, ch_array* const* g, size_t n_g) {
  return bwd(u, c, in, n_in, out, n_out, g, n_g, 0);
}
static ch_status bwd_cpu(void* u, ch_context* c, ch_array* const* in, size_t n_in,
                         ch_array* const* out, size_t n_out, ch_array* const* g, size_t n_g) {
  return bwd(u, c, in, n_in, out, n_out, g, n_g, 1);
}
static ch_status bwd_gpu(void* u, ch_context* c, ch_array* const* in, size_t n_in,
                         ch_array* const* out, size_t n_out, ch_array* const* g, size_t n_g) {
  return bwd(u, c, in, n_in, out, n_out, g, n_g, 2);
}
static ch_status bwd_graph(void* u, ch_context* c, ch_variable* const* in, size_t n_in,
                           ch_variable* const* out, size_t n_out, ch_variable* const* g,
                           size_t n_g, ch_variable** gx) {
  (void)c;
  return chainercGoBackwardGraph((uintptr_t)u, (ch_variable**)in, n_in, (ch_variable**)out, n_out,
                                 (ch_variable**)g, n_g, gx);
}
static void destroy_handle(void* u) { chainercGoDeleteHandle((uintptr_t)u); }

gres gch_function_new(const char* name, uintptr_t handle, int flags) {
  ch_function_def def;
  memset(&def, 0, sizeof def);
  def.version = CH_FUNCTION_DEF_VERSION;
  def.name = name;
  def.forward = fwd_any;
  def.backward = bwd_any;
  if (flags & GCH_HAS_FORWARD_CPU) def.forward_cpu = fwd_cpu;
  if (flags & GCH_HAS_FORWARD_GPU) def.forward_gpu = fwd_gpu;
  if (flags & GCH_HAS_BACKWARD_CPU) def.backward_cpu = bwd_cpu;
  if (flags & GCH_HAS_BACKWARD_GPU) def.backward_gpu = bwd_gpu;
  if (flags & GCH_HAS_BACKWARD_GRAPH) def.graph_backward = bwd_graph;
  def.user_data = (void*)handle;
  def.destroy = destroy_handle;
  gres r = g_ch_function_new(&def);
  if (r.st != CH_OK) chainercGoDeleteHandle(handle); /* destroy is not called on failure */
  return r;
}

gres gch_apply1(ch_function* f, ch_variable* const* inputs, size_t n) {
  ch_variable* out = NULL;
  size_t n_out = 0;
  gres r = g_ch_function_apply(f, inputs, n, &out, 1, &n_out);
  r.out = out;
  r.d = (double)n_out;
  return r;
}

static ch_status graph_cb(void* u, ch_variable* const* in, size_t n_in, ch_variable** out,
                          size_t n_out) {
  return chainercGoGraph((uintptr_t)u, (ch_variable**)in, n_in, out, n_out);
}

gres gch_check_backward_graph(uintptr_t handle, ch_array* const* inputs, size_t n_inputs,
                              ch_array* const* grad_outputs, size_t n_grad_outputs, double eps,
                              double atol, double rtol) {
  return g_ch_check_backward_graph(graph_cb, (void*)handle, inputs, n_inputs, grad_outputs,
                                   n_grad_outputs, eps, atol, rtol);
}

gres gch_check_double_backward(uintptr_t handle, ch_array* const* inputs, size_t n_inputs,
                               ch_array* const* grad_outputs, size_t n_grad_outputs,
                               ch_array* const* grad_grad_inputs, size_t n_grad_grad_inputs,
                               double eps, double atol, double rtol) {
  return g_ch_check_double_backward(graph_cb, (void*)handle, inputs, n_inputs, grad_outputs,
                                    n_grad_outputs, grad_grad_inputs, n_grad_grad_inputs, eps,
                                    atol, rtol);
}

static ch_status eval_cb(void* u, ch_context* ctx) { return chainercGoEval((uintptr_t)u, ctx); }

gres gch_numerical_grad(ch_array** out, uintptr_t handle, ch_array* const* inputs, size_t n_inputs,
                        ch_array* const* grad_outputs, size_t n_grad_outputs, double eps) {
  return g_ch_numerical_grad(out, eval_cb, (void*)handle, inputs, n_inputs, grad_outputs,
                             n_grad_outputs, eps);
}

gch_info gch_array_info(const ch_array* a) {
  gch_info r;
  r.data = ch_array_data(a);
  r.shape = ch_array_shape(a);
  r.size = ch_array_size(a);
  r.dtype = ch_array_dtype(a);
  r.ndim = ch_array_ndim(a);
  r.device_type = ch_array_device(a).type;
  return r;
}

static ch_status opt_init(void* u, ch_array* param, ch_array* grad, ch_array** states, size_t n) {
  return chainercGoOptInit((uintptr_t)u, param, grad, states, n);
}
static ch_status opt_update(void* u, ch_array* param, ch_array* grad, ch_array* const* states,
                            size_t n, int64_t t) {
  return chainercGoOptUpdate((uintptr_t)u, param, grad, (ch_array**)states, n, t);
}

gres gch_optimizer_new(const char* name, uintptr_t handle, size_t n_states,
                       const char* const* state_names) {
  ch_optimizer_def def;
  memset(&def, 0, sizeof def);
  def.version = CH_OPTIMIZER_DEF_VERSION;
  def.name = name;
  def.n_states = n_states;
  def.state_names = state_names;
  def.init_state = opt_init;
  def.update_one = opt_update;
  def.user_data = (void*)handle;
  def.destroy = destroy_handle;
  gres r = g_ch_optimizer_new(&def);
  if (r.st != CH_OK) chainercGoDeleteHandle(handle);
  return r;
}

static void release_flagged(ch_array* const* arrays, size_t n, const uint8_t* release) {
  for (size_t i = 0; i < n; ++i)
    if (arrays[i] && release[i]) ch_array_release(arrays[i]);
}

gres gch_add_outputs(ch_context* ctx, ch_array* const* arrays, size_t n, const uint8_t* release) {
  gres r;
  memset(&r, 0, sizeof r);
  for (size_t i = 0; i < n && r.st == CH_OK; ++i) r = g_ch_context_add_output(ctx, arrays[i]);
  release_flagged(arrays, n, release);
  return r;
}

gres gch_set_grads(ch_context* ctx, ch_array* const* arrays, size_t n, const uint8_t* release) {
  gres r;
  memset(&r, 0, sizeof r);
  for (size_t i = 0; i < n && r.st == CH_OK; ++i)
    if (arrays[i]) r = g_ch_context_set_grad_input(ctx, i, arrays[i]);
  release_flagged(arrays, n, release);
  return r;
}

gres gch_array_new_like(const ch_array* a, int empty, double value) {
  if (empty)
    return g_ch_array_new_empty(ch_array_dtype(a), ch_array_shape(a), ch_array_ndim(a),
                                ch_array_device(a));
  return g_ch_array_new_full(ch_array_dtype(a), ch_array_shape(a), ch_array_ndim(a), value,
                             ch_array_device(a));
}
