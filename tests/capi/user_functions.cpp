#include "user_functions.h"

#include <cmath>

namespace capi_test {

void probe_destroy(void* user_data) { static_cast<Probe*>(user_data)->destroyed++; }

ch_status new_like(ch_array** out, const ch_array* like) {
  return ch_array_new_empty(out, ch_array_dtype(like), ch_array_shape(like), ch_array_ndim(like),
                            ch_device_cpu());
}

namespace {

Probe* probe_of(void* ud) { return static_cast<Probe*>(ud); }

void note_forward(void* ud) {
  Probe* p = probe_of(ud);
  p->forward_calls++;
  std::lock_guard<std::mutex> lock(p->mutex);
  p->forward_thread = std::this_thread::get_id();
}

void note_backward(void* ud) {
  Probe* p = probe_of(ud);
  p->backward_calls++;
  std::lock_guard<std::mutex> lock(p->mutex);
  p->backward_thread = std::this_thread::get_id();
}

ch_status fail_with(ch_status st, const char* msg) {
  ch_error_set(st, msg);
  return st;
}

// Report `a` as the next output and drop our reference.
ch_status add_output(ch_context* ctx, ch_array* a) {
  ch_status st = ch_context_add_output(ctx, a);
  ch_array_release(a);
  return st;
}

ch_status set_grad(ch_context* ctx, size_t i, ch_array* g) {
  ch_status st = ch_context_set_grad_input(ctx, i, g);
  ch_array_release(g);
  return st;
}

// ---- MulAdd ------------------------------------------------------------------

template <typename T>
ch_status muladd_forward_t(ch_context* ctx, ch_array* const* in) {
  ch_array* w = nullptr;
  ch_status st = new_like(&w, in[0]);
  if (st != CH_OK) return st;
  const T *x = cdata<T>(in[0]), *y = cdata<T>(in[1]), *z = cdata<T>(in[2]);
  T* pw = mdata<T>(w);
  for (int64_t i = 0, n = ch_array_size(in[0]); i < n; ++i) pw[i] = x[i] * y[i] + z[i];
  return add_output(ctx, w);
}

ch_status muladd_forward(void* ud, ch_context* ctx, ch_array* const* in, size_t n) {
  note_forward(ud);
  if (n != 3) return fail_with(CH_ERR_INVALID_ARGUMENT, "MulAdd takes 3 inputs");
  return ch_array_dtype(in[0]) == CH_FLOAT64 ? muladd_forward_t<double>(ctx, in)
                                             : muladd_forward_t<float>(ctx, in);
}

template <typename T>
ch_status muladd_backward_t(void* ud, ch_context* ctx, ch_array* const* in, ch_array* const* gout) {
  ch_array *gx = nullptr, *gy = nullptr;
  ch_status st = new_like(&gx, in[0]);
  if (st != CH_OK) return st;
  st = new_like(&gy, in[1]);
  if (st != CH_OK) {
    ch_array_release(gx);
    return st;
  }
  const T *x = cdata<T>(in[0]), *y = cdata<T>(in[1]), *gw = cdata<T>(gout[0]);
  const T factor = probe_of(ud)->wrong_backward ? T(3) : T(1);
  for (int64_t i = 0, n = ch_array_size(in[0]); i < n; ++i) {
    mdata<T>(gx)[i] = factor * y[i] * gw[i];  // gx = y * gw
    mdata<T>(gy)[i] = x[i] * gw[i];           // gy = x * gw
  }
  st = set_grad(ctx, 0, gx);
  ch_status st2 = set_grad(ctx, 1, gy);
  if (st == CH_OK) st = st2;
  // gz = gw: hand the incoming gradient through unchanged (zero-copy).
  if (st == CH_OK) st = ch_context_set_grad_input(ctx, 2, gout[0]);
  return st;
}

ch_status muladd_backward(void* ud, ch_context* ctx, ch_array* const* in, size_t n_in,
                          ch_array* const*, size_t, ch_array* const* gout, size_t n_gout) {
  note_backward(ud);
  if (n_in != 3 || n_gout != 1)
    return fail_with(CH_ERR_INVALID_ARGUMENT, "MulAdd: bad arity in backward");
  return ch_array_dtype(in[0]) == CH_FLOAT64 ? muladd_backward_t<double>(ud, ctx, in, gout)
                                             : muladd_backward_t<float>(ud, ctx, in, gout);
}

// ---- ExpAdd ------------------------------------------------------------------

template <typename T>
ch_status expadd_forward_t(ch_context* ctx, ch_array* const* in) {
  ch_array* z = nullptr;
  ch_status st = new_like(&z, in[0]);
  if (st != CH_OK) return st;
  const T *x = cdata<T>(in[0]), *y = cdata<T>(in[1]);
  for (int64_t i = 0, n = ch_array_size(in[0]); i < n; ++i)
    mdata<T>(z)[i] = std::exp(x[i]) + std::exp(y[i]);
  return add_output(ctx, z);
}

ch_status expadd_forward(void* ud, ch_context* ctx, ch_array* const* in, size_t n) {
  note_forward(ud);
  if (n != 2) return fail_with(CH_ERR_INVALID_ARGUMENT, "ExpAdd takes 2 inputs");
  return ch_array_dtype(in[0]) == CH_FLOAT64 ? expadd_forward_t<double>(ctx, in)
                                             : expadd_forward_t<float>(ctx, in);
}

template <typename T>
ch_status expadd_backward_t(void* ud, ch_context* ctx, ch_array* const* in, ch_array* const* gout) {
  ch_array *gx = nullptr, *gy = nullptr;
  ch_status st = new_like(&gx, in[0]);
  if (st != CH_OK) return st;
  st = new_like(&gy, in[1]);
  if (st != CH_OK) {
    ch_array_release(gx);
    return st;
  }
  const T *x = cdata<T>(in[0]), *y = cdata<T>(in[1]), *gz = cdata<T>(gout[0]);
  const T factor = probe_of(ud)->wrong_backward ? T(3) : T(1);
  for (int64_t i = 0, n = ch_array_size(in[0]); i < n; ++i) {
    mdata<T>(gx)[i] = factor * gz[i] * std::exp(x[i]);
    mdata<T>(gy)[i] = gz[i] * std::exp(y[i]);
  }
  st = set_grad(ctx, 0, gx);
  ch_status st2 = set_grad(ctx, 1, gy);
  return st != CH_OK ? st : st2;
}

ch_status expadd_backward(void* ud, ch_context* ctx, ch_array* const* in, size_t n_in,
                          ch_array* const*, size_t, ch_array* const* gout, size_t n_gout) {
  note_backward(ud);
  if (n_in != 2 || n_gout != 1)
    return fail_with(CH_ERR_INVALID_ARGUMENT, "ExpAdd: bad arity in backward");
  return ch_array_dtype(in[0]) == CH_FLOAT64 ? expadd_backward_t<double>(ud, ctx, in, gout)
                                             : expadd_backward_t<float>(ud, ctx, in, gout);
}

// Installed in the generic slots with Slots::Both: must never run on CPU inputs.
ch_status must_not_run_forward(void*, ch_context*, ch_array* const*, size_t) {
  return fail_with(CH_ERR_INTERNAL, "generic forward ran although forward_cpu is set");
}
ch_status must_not_run_backward(void*, ch_context*, ch_array* const*, size_t, ch_array* const*,
                                size_t, ch_array* const*, size_t) {
  return fail_with(CH_ERR_INTERNAL, "generic backward ran although backward_cpu is set");
}

Fn make_fn(const char* name, ch_forward_callback f, ch_backward_callback b, Probe* probe,
           Slots slots) {
  ch_function_def def{};
  def.version = CH_FUNCTION_DEF_VERSION;
  def.name = name;
  switch (slots) {
    case Slots::Generic:
      def.forward = f;
      def.backward = b;
      break;
    case Slots::Cpu:
      def.forward_cpu = f;
      def.backward_cpu = b;
      break;
    case Slots::Both:
      def.forward = must_not_run_forward;
      def.backward = must_not_run_backward;
      def.forward_cpu = f;
      def.backward_cpu = b;
      break;
  }
  def.user_data = probe;
  def.destroy = probe_destroy;
  Fn fn;
  ch_status st = ch_function_new(fn.out(), &def);
  EXPECT_EQ(st, CH_OK) << ch_error_message();
  return fn;
}

// ---- EltwiseParamProduct -------------------------------------------------------

// Parameter 0 of the function being applied: w, and optionally gw.
ch_status param_arrays(ch_context* ctx, ch_array** w, ch_array** gw) {
  ch_function* f = nullptr;
  ch_status st = ch_context_function(&f, ctx);
  if (st != CH_OK) return st;
  st = ch_function_parameter(w, gw, nullptr, f, 0);
  ch_function_release(f);
  return st;
}

ch_status epp_forward(void* ud, ch_context* ctx, ch_array* const* in, size_t n) {
  note_forward(ud);
  if (n != 1) return fail_with(CH_ERR_INVALID_ARGUMENT, "EltwiseParamProduct takes 1 input");
  ch_array *w = nullptr, *y = nullptr;
  ch_status st = param_arrays(ctx, &w, nullptr);
  if (st != CH_OK) return st;
  st = new_like(&y, in[0]);
  if (st == CH_OK) {
    const float *x = cdata<float>(in[0]), *pw = cdata<float>(w);
    for (int64_t i = 0, m = ch_array_size(in[0]); i < m; ++i) mdata<float>(y)[i] = pw[i] * x[i];
    st = add_output(ctx, y);
  }
  ch_array_release(w);
  return st;
}

ch_status epp_backward(void* ud, ch_context* ctx, ch_array* const* in, size_t, ch_array* const*,
                       size_t, ch_array* const* gout, size_t) {
  note_backward(ud);
  ch_array *w = nullptr, *gw = nullptr, *gx = nullptr;
  ch_status st = param_arrays(ctx, &w, &gw);
  if (st != CH_OK) return st;
  st = new_like(&gx, in[0]);
  if (st == CH_OK) {
    const float *x = cdata<float>(in[0]), *pw = cdata<float>(w), *gy = cdata<float>(gout[0]);
    float* pgw = mdata<float>(gw);
    for (int64_t i = 0, m = ch_array_size(in[0]); i < m; ++i) {
      pgw[i] += gy[i] * x[i];               // self.gw += gy * x
      mdata<float>(gx)[i] = gy[i] * pw[i];  // gx = gy * self.w
    }
    st = set_grad(ctx, 0, gx);
  }
  ch_array_release(w);
  ch_array_release(gw);
  return st;
}

// ---- Lambda ----------------------------------------------------------------------

ch_status lambda_forward(void* ud, ch_context* ctx, ch_array* const* in, size_t n) {
  return static_cast<Lambda*>(ud)->forward(ctx, in, n);
}
ch_status lambda_backward(void* ud, ch_context* ctx, ch_array* const* in, size_t n_in,
                          ch_array* const* out, size_t n_out, ch_array* const* gout,
                          size_t n_gout) {
  return static_cast<Lambda*>(ud)->backward(ctx, in, n_in, out, n_out, gout, n_gout);
}
void lambda_destroy(void* ud) { static_cast<Lambda*>(ud)->destroyed++; }

}  // namespace

Fn make_lambda_fn(const char* name, Lambda* lambda) {
  ch_function_def def{};
  def.version = CH_FUNCTION_DEF_VERSION;
  def.name = name;
  def.forward = lambda_forward;
  def.backward = lambda->backward ? lambda_backward : nullptr;
  def.user_data = lambda;
  def.destroy = lambda_destroy;
  Fn fn;
  ch_status st = ch_function_new(fn.out(), &def);
  EXPECT_EQ(st, CH_OK) << ch_error_message();
  return fn;
}

Var apply1(ch_function* f, std::initializer_list<ch_variable*> inputs) {
  std::vector<ch_variable*> in(inputs);
  Var out;
  size_t n = 0;
  ch_status st = ch_function_apply(f, in.data(), in.size(), out.out(), 1, &n);
  EXPECT_EQ(st, CH_OK) << ch_function_name(f) << ": " << ch_error_message();
  if (st == CH_OK) {
    EXPECT_GE(n, 1u);
  }
  return out;
}

Fn make_muladd(Probe* probe, Slots slots) {
  return make_fn("MulAdd", muladd_forward, muladd_backward, probe, slots);
}

Fn make_expadd(Probe* probe, Slots slots) {
  return make_fn("ExpAdd", expadd_forward, expadd_backward, probe, slots);
}

Fn make_eltwise_param_product(Probe* probe, ch_array* w, ch_array* gw) {
  Fn fn = make_fn("EltwiseParamProduct", epp_forward, epp_backward, probe, Slots::Generic);
  ch_status st = ch_function_add_parameter(fn, "w", w, gw);
  EXPECT_EQ(st, CH_OK) << ch_error_message();
  return fn;
}

}  // namespace capi_test
