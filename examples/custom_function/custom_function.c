/*
 * Defining your own functions through the C API (the seed's section 1.4,
 * "Define your own function"), each checked against numerical gradients with
 * ch_check_backward in float64 and float32:
 *   MulAdd               w = x * y + z                       (non-parameterized)
 *   ExpAdd               z = exp(x) + exp(y)                 (non-parameterized)
 *   EltwiseParamProduct  y = w * x, w a parameter; backward accumulates
 *                        gw += gy * x (the seed's 1.4.3)
 * The parameter gradient gw is checked too, with ch_numerical_grad on w.
 * Prints what it did; exits with status 1 on any failure (a wrong gradient
 * included) and 2 if handles leaked.
 */
#include <ch/ch.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

/* Stop on the first error, printing what the library said. */
#define CHECK(call)                                                                                \
  do {                                                                                             \
    ch_status status_ = (call);                                                                    \
    if (status_ != CH_OK) {                                                                        \
      fprintf(stderr, "%s failed: %s (%s)\n", #call, ch_error_message(), ch_status_name(status_)); \
      exit(1);                                                                                     \
    }                                                                                              \
  } while (0)

/* Inside callbacks: return the failing status (the engine reports it). */
#define TRY(call)                 \
  do {                            \
    ch_status st_ = (call);       \
    if (st_ != CH_OK) return st_; \
  } while (0)

/* A new uninitialised array of a's dtype and shape. */
static ch_status new_like(ch_array** out, const ch_array* a) {
  return ch_array_new_empty(out, ch_array_dtype(a), ch_array_shape(a), ch_array_ndim(a),
                            ch_device_cpu());
}

/* Element k of a float32/float64 array as double, and back. */
static double get(const ch_array* a, int64_t k) {
  return ch_array_dtype(a) == CH_FLOAT64 ? ((const double*)ch_array_data(a))[k]
                                         : ((const float*)ch_array_data(a))[k];
}
static void set(ch_array* a, int64_t k, double v) {
  if (ch_array_dtype(a) == CH_FLOAT64)
    ((double*)ch_array_data(a))[k] = v;
  else
    ((float*)ch_array_data(a))[k] = (float)v;
}

/* Inputs must be float arrays of one dtype and shape (the message says which). */
static ch_status check_inputs(const char* name, ch_array* const* in, size_t n) {
  size_t i;
  int32_t d;
  for (i = 0; i < n; ++i) {
    ch_dtype dt = ch_array_dtype(in[i]);
    if ((dt != CH_FLOAT32 && dt != CH_FLOAT64) || dt != ch_array_dtype(in[0]) ||
        ch_array_ndim(in[i]) != ch_array_ndim(in[0])) {
      ch_error_set(CH_ERR_DTYPE, "inputs must be float arrays of one dtype and shape");
      return CH_ERR_DTYPE;
    }
    for (d = 0; d < ch_array_ndim(in[0]); ++d)
      if (ch_array_shape(in[i])[d] != ch_array_shape(in[0])[d]) {
        ch_error_set(CH_ERR_SHAPE, name);
        return CH_ERR_SHAPE;
      }
  }
  return CH_OK;
}

/* ---- MulAdd: w = x * y + z ------------------------------------------------- */

static ch_status muladd_forward(void* user_data, ch_context* ctx, ch_array* const* in, size_t n) {
  ch_array* w;
  int64_t k, size = ch_array_size(in[0]);
  ch_status st;
  (void)user_data;
  TRY(check_inputs("MulAdd: x, y and z must have one shape", in, n));
  TRY(new_like(&w, in[0]));
  for (k = 0; k < size; ++k) set(w, k, get(in[0], k) * get(in[1], k) + get(in[2], k));
  st = ch_context_add_output(ctx, w); /* retained by the engine */
  ch_array_release(w);
  return st;
}

static ch_status muladd_backward(void* user_data, ch_context* ctx, ch_array* const* in, size_t n_in,
                                 ch_array* const* out, size_t n_out, ch_array* const* gout,
                                 size_t n_gout) {
  ch_array *gx = NULL, *gy = NULL;
  int64_t k, size = ch_array_size(in[0]);
  ch_status st;
  (void)user_data, (void)n_in, (void)out, (void)n_out, (void)n_gout;
  st = new_like(&gx, in[0]);
  if (st == CH_OK) st = new_like(&gy, in[1]);
  if (st == CH_OK) {
    for (k = 0; k < size; ++k) {
      set(gx, k, get(in[1], k) * get(gout[0], k)); /* gx = y * gw */
      set(gy, k, get(in[0], k) * get(gout[0], k)); /* gy = x * gw */
    }
    st = ch_context_set_grad_input(ctx, 0, gx);
  }
  if (st == CH_OK) st = ch_context_set_grad_input(ctx, 1, gy);
  if (st == CH_OK) st = ch_context_set_grad_input(ctx, 2, gout[0]); /* gz = gw, no copy */
  ch_array_release(gx);
  ch_array_release(gy);
  return st;
}

/* ---- ExpAdd: z = exp(x) + exp(y) ---------------------------------------- */

static ch_status expadd_forward(void* user_data, ch_context* ctx, ch_array* const* in, size_t n) {
  ch_array* z;
  int64_t k, size = ch_array_size(in[0]);
  ch_status st;
  (void)user_data;
  TRY(check_inputs("ExpAdd: x and y must have one shape", in, n));
  TRY(new_like(&z, in[0]));
  for (k = 0; k < size; ++k) set(z, k, exp(get(in[0], k)) + exp(get(in[1], k)));
  st = ch_context_add_output(ctx, z);
  ch_array_release(z);
  return st;
}

static ch_status expadd_backward(void* user_data, ch_context* ctx, ch_array* const* in, size_t n_in,
                                 ch_array* const* out, size_t n_out, ch_array* const* gout,
                                 size_t n_gout) {
  size_t i;
  (void)user_data, (void)out, (void)n_out, (void)n_gout;
  for (i = 0; i < n_in; ++i) { /* g_i = exp(input_i) * gz */
    ch_array* g;
    int64_t k, size = ch_array_size(in[i]);
    ch_status st;
    TRY(new_like(&g, in[i]));
    for (k = 0; k < size; ++k) set(g, k, exp(get(in[i], k)) * get(gout[0], k));
    st = ch_context_set_grad_input(ctx, i, g);
    ch_array_release(g);
    if (st != CH_OK) return st;
  }
  return CH_OK;
}

/* ---- EltwiseParamProduct: y = w * x, parameter w ---------------------------- */

/* The function object's user data: its parameter and gradient arrays. */
typedef struct {
  ch_array* w;
  ch_array* gw;
} ParamProduct;

static void param_product_destroy(void* user_data) {
  ParamProduct* p = user_data;
  ch_array_release(p->w);
  ch_array_release(p->gw);
  free(p);
}

static ch_status param_product_forward(void* user_data, ch_context* ctx, ch_array* const* in,
                                       size_t n) {
  ParamProduct* p = user_data;
  ch_array* pair[2];
  ch_array* y;
  int64_t k, size = ch_array_size(in[0]);
  ch_status st;
  (void)n;
  pair[0] = p->w;
  pair[1] = in[0];
  TRY(check_inputs("EltwiseParamProduct: x must have w's shape", pair, 2));
  TRY(new_like(&y, in[0]));
  for (k = 0; k < size; ++k) set(y, k, get(p->w, k) * get(in[0], k));
  st = ch_context_add_output(ctx, y);
  ch_array_release(y);
  return st;
}

static ch_status param_product_backward(void* user_data, ch_context* ctx, ch_array* const* in,
                                        size_t n_in, ch_array* const* out, size_t n_out,
                                        ch_array* const* gout, size_t n_gout) {
  ParamProduct* p = user_data;
  ch_array* gx;
  int64_t k, size = ch_array_size(in[0]);
  ch_status st;
  (void)n_in, (void)out, (void)n_out, (void)n_gout;
  TRY(new_like(&gx, in[0]));
  for (k = 0; k < size; ++k) {
    set(p->gw, k, get(p->gw, k) + get(gout[0], k) * get(in[0], k)); /* gw += gy * x */
    set(gx, k, get(gout[0], k) * get(p->w, k));                     /* gx = gy * w */
  }
  st = ch_context_set_grad_input(ctx, 0, gx);
  ch_array_release(gx);
  return st;
}

/* ---- driver ---------------------------------------------------------------- */

static const int64_t kShape[2] = {2, 3};

/* A (2, 3) array of `dtype` with values depending on `seed` (moderate, so
 * exp stays well conditioned). */
static ch_array* sample(ch_dtype dtype, int seed) {
  ch_array* a;
  int64_t k;
  CHECK(ch_array_new_empty(&a, dtype, kShape, 2, ch_device_cpu()));
  for (k = 0; k < 6; ++k) set(a, k, 0.9 * sin(1.7 * (double)(k + 1) * (seed + 1)) + 0.05 * seed);
  return a;
}

static void print_array(const char* label, const ch_array* a) {
  int64_t k;
  printf("  %s = [", label);
  for (k = 0; k < ch_array_size(a); ++k) printf(k ? ", %.6g" : "%.6g", get(a, k));
  printf("]\n");
}

/* Apply f to arrays `in` and print the output. */
static void show(ch_function* f, ch_array* const* in, size_t n) {
  ch_variable* vars[3];
  ch_variable* y;
  ch_array* data;
  size_t i;
  for (i = 0; i < n; ++i) CHECK(ch_variable_new(&vars[i], in[i], 0));
  CHECK(ch_function_apply(f, vars, n, &y, 1, NULL));
  CHECK(ch_variable_data(&data, y));
  print_array("output", data);
  ch_array_release(data);
  ch_variable_release(y);
  for (i = 0; i < n; ++i) ch_variable_release(vars[i]);
}

/* Tolerances of check_backward per dtype (central differences). */
static void tolerances(ch_dtype dtype, double* eps, double* atol, double* rtol) {
  *eps = dtype == CH_FLOAT64 ? 1e-6 : 1e-3;
  *atol = dtype == CH_FLOAT64 ? 1e-8 : 1e-3;
  *rtol = dtype == CH_FLOAT64 ? 1e-7 : 1e-3;
}

static void check_function(ch_function* f, size_t n_inputs, ch_dtype dtype) {
  ch_array* in[3];
  size_t i;
  double eps, atol, rtol;
  tolerances(dtype, &eps, &atol, &rtol);
  for (i = 0; i < n_inputs; ++i) in[i] = sample(dtype, (int)i);
  printf("%s, %s:\n", ch_function_name(f), ch_dtype_name(dtype));
  show(f, in, n_inputs);
  CHECK(ch_check_backward(f, in, n_inputs, NULL, 0, eps, atol, rtol));
  printf("  check_backward: OK\n");
  for (i = 0; i < n_inputs; ++i) ch_array_release(in[i]);
}

/* Numerical gradient check of the parameter: apply to x and report y. */
typedef struct {
  ch_function* f;
  ch_array* x;
} EvalData;

static ch_status eval_param_product(void* user_data, ch_context* ctx) {
  EvalData* e = user_data;
  ch_variable *x, *y;
  ch_array* data;
  ch_status st;
  TRY(ch_variable_new(&x, e->x, 1)); /* volatile: no graph needed */
  st = ch_function_apply(e->f, &x, 1, &y, 1, NULL);
  ch_variable_release(x);
  if (st != CH_OK) return st;
  st = ch_variable_data(&data, y);
  ch_variable_release(y);
  if (st != CH_OK) return st;
  st = ch_context_add_output(ctx, data);
  ch_array_release(data);
  return st;
}

static void check_param_product(ch_dtype dtype) {
  ch_function_def def = {0};
  ch_function* f;
  ParamProduct* p = malloc(sizeof *p);
  ch_array *x, *gy, *num;
  ch_variable *vx, *vy;
  EvalData e;
  double eps, atol, rtol;
  tolerances(dtype, &eps, &atol, &rtol);
  if (!p) exit(1);
  p->w = sample(dtype, 7);
  CHECK(ch_array_new_full(&p->gw, dtype, kShape, 2, 0.0, ch_device_cpu()));
  def.version = CH_FUNCTION_DEF_VERSION;
  def.name = "EltwiseParamProduct";
  def.forward = param_product_forward;
  def.backward = param_product_backward;
  def.user_data = p;
  def.destroy = param_product_destroy;
  if (ch_function_new(&f, &def) != CH_OK) {
    param_product_destroy(p); /* not called by the library on failure */
    CHECK(CH_ERR_INTERNAL);
  }
  CHECK(ch_function_add_parameter(f, "w", p->w, p->gw));

  /* The input's gradient, as the other functions. */
  check_function(f, 1, dtype);

  /* The parameter's: gw from backward (after zeroing) against numerical. */
  x = sample(dtype, 3);
  gy = sample(dtype, 4);
  CHECK(ch_array_fill(p->gw, 0.0));
  CHECK(ch_variable_new(&vx, x, 0));
  CHECK(ch_function_apply(f, &vx, 1, &vy, 1, NULL));
  CHECK(ch_variable_set_grad(vy, gy));
  CHECK(ch_variable_backward(vy, 0));
  e.f = f;
  e.x = x;
  CHECK(ch_numerical_grad(&num, eval_param_product, &e, &p->w, 1, &gy, 1, eps));
  print_array("gw", p->gw);
  CHECK(ch_allclose(p->gw, num, atol, rtol, NULL));
  printf("  gw matches the numerical gradient: OK\n");
  ch_array_release(num);
  ch_variable_release(vy);
  ch_variable_release(vx);
  ch_array_release(gy);
  ch_array_release(x);
  ch_function_release(f); /* destroys p once the last application is gone */
}

int main(void) {
  const ch_dtype dtypes[2] = {CH_FLOAT64, CH_FLOAT32};
  int d;
  printf("chainerc %s: user-defined functions in C\n\n", ch_version_string());
  for (d = 0; d < 2; ++d) {
    ch_function_def def = {0};
    ch_function *muladd, *expadd;
    def.version = CH_FUNCTION_DEF_VERSION;
    def.name = "MulAdd";
    def.forward = muladd_forward;
    def.backward = muladd_backward;
    CHECK(ch_function_new(&muladd, &def));
    def.name = "ExpAdd";
    def.forward = expadd_forward;
    def.backward = expadd_backward;
    CHECK(ch_function_new(&expadd, &def));
    check_function(muladd, 3, dtypes[d]);
    check_function(expadd, 2, dtypes[d]);
    check_param_product(dtypes[d]);
    ch_function_release(muladd);
    ch_function_release(expadd);
  }
  if (ch_debug_live_handles() != 0) {
    ch_debug_report_live_handles();
    return 2;
  }
  printf("\nall checks passed\n");
  return 0;
}
