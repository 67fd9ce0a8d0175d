/*
 * The seed's tutorial computations (Chainer 1.0 documentation, section 1.1.2
 * and 1.4) written against the C API, printing the same values:
 *   x = 5; y = x**2 - 2x + 1       -> y = 16, x.grad = 8
 *   z = 2x; y = x**2 - z + 1       -> with retain_grad, z.grad = -1
 *   x = [[1,2,3],[4,5,6]]          -> x.grad = [[0,2,4],[6,8,10]]
 *   MulAdd as a custom function    -> checked with check_backward
 */
#include <ch/ch.h>

#include <stdio.h>
#include <stdlib.h>

/* Stop on the first error, printing what the library said. */
#define CHECK(call)                                                              \
  do {                                                                           \
    ch_status status_ = (call);                                                  \
    if (status_ != CH_OK) {                                                      \
      fprintf(stderr, "%s failed: %s (%s)\n", #call, ch_error_message(),         \
              ch_status_name(status_));                                          \
      exit(1);                                                                   \
    }                                                                            \
  } while (0)

static void print_array(const char* label, const ch_array* a) {
  const float* p = (const float*)ch_array_data(a);
  int64_t n = ch_array_size(a);
  int64_t i;
  printf("%s [", label);
  for (i = 0; i < n; ++i) printf(i ? ", %g" : "%g", p[i]);
  printf("]\n");
}

static void print_grad(const char* label, const ch_variable* v) {
  ch_array* g = NULL;
  CHECK(ch_variable_grad(&g, v));
  print_array(label, g);
  ch_array_release(g);
}

/* y = x**2 - 2*x + 1, built from the built-in functions. */
static ch_variable* polynomial(ch_variable* x) {
  ch_variable *x2, *twox, *d, *y;
  CHECK(ch_functions_pow_scalar(&x2, x, 2.0));
  CHECK(ch_functions_mul_scalar(&twox, x, 2.0));
  CHECK(ch_functions_sub(&d, x2, twox));
  CHECK(ch_functions_add_scalar(&y, d, 1.0));
  ch_variable_release(x2);
  ch_variable_release(twox);
  ch_variable_release(d);
  return y;
}

/* MulAdd: w = x * y + z, with forward and backward callbacks. */
static ch_status muladd_forward(void* user_data, ch_context* ctx, ch_array* const* in, size_t n) {
  ch_array* w;
  const float *x = ch_array_data(in[0]), *y = ch_array_data(in[1]), *z = ch_array_data(in[2]);
  float* pw;
  int64_t i, size = ch_array_size(in[0]);
  ch_status st;
  (void)user_data;
  (void)n;
  st = ch_array_new_empty(&w, CH_FLOAT32, ch_array_shape(in[0]), ch_array_ndim(in[0]), ch_device_cpu());
  if (st != CH_OK) return st;
  pw = ch_array_data(w);
  for (i = 0; i < size; ++i) pw[i] = x[i] * y[i] + z[i];
  st = ch_context_add_output(ctx, w);
  ch_array_release(w);
  return st;
}

static ch_status muladd_backward(void* user_data, ch_context* ctx, ch_array* const* in, size_t n_in,
                                 ch_array* const* out, size_t n_out, ch_array* const* gout,
                                 size_t n_gout) {
  ch_array *gx, *gy;
  const float *x = ch_array_data(in[0]), *y = ch_array_data(in[1]), *gw = ch_array_data(gout[0]);
  int64_t i, size = ch_array_size(in[0]);
  ch_status st;
  (void)user_data;
  (void)n_in;
  (void)out;
  (void)n_out;
  (void)n_gout;
  st = ch_array_new_empty(&gx, CH_FLOAT32, ch_array_shape(in[0]), ch_array_ndim(in[0]), ch_device_cpu());
  if (st != CH_OK) return st;
  st = ch_array_new_empty(&gy, CH_FLOAT32, ch_array_shape(in[0]), ch_array_ndim(in[0]), ch_device_cpu());
  if (st != CH_OK) {
    ch_array_release(gx);
    return st;
  }
  for (i = 0; i < size; ++i) {
    ((float*)ch_array_data(gx))[i] = y[i] * gw[i];
    ((float*)ch_array_data(gy))[i] = x[i] * gw[i];
  }
  st = ch_context_set_grad_input(ctx, 0, gx);
  if (st == CH_OK) st = ch_context_set_grad_input(ctx, 1, gy);
  if (st == CH_OK) st = ch_context_set_grad_input(ctx, 2, gout[0]); /* gz = gw */
  ch_array_release(gx);
  ch_array_release(gy);
  return st;
}

int main(void) {
  const int64_t one[1] = {1};
  const int64_t two_by_three[2] = {2, 3};
  const float five = 5.0f;
  const float x23[6] = {1, 2, 3, 4, 5, 6};
  ch_array *xa, *data, *ones;
  ch_variable *x, *y, *z, *x2, *d;

  printf("chainerc %s\n\n", ch_version_string());

  /* 1.1.2: x = Variable(np.array([5], dtype=np.float32)); y = x**2 - 2*x + 1 */
  CHECK(ch_array_new(&xa, CH_FLOAT32, one, 1, &five, ch_device_cpu()));
  CHECK(ch_variable_new(&x, xa, 0));
  y = polynomial(x);
  CHECK(ch_variable_data(&data, y));
  print_array(">>> y.data", data);
  ch_array_release(data);
  CHECK(ch_variable_backward(y, 0));
  print_grad(">>> x.grad", x);
  ch_variable_release(y);

  /* z = 2*x; y = x**2 - z + 1; y.backward(retain_grad=True); z.grad */
  CHECK(ch_functions_mul_scalar(&z, x, 2.0));
  CHECK(ch_functions_pow_scalar(&x2, x, 2.0));
  CHECK(ch_functions_sub(&d, x2, z));
  CHECK(ch_functions_add_scalar(&y, d, 1.0));
  CHECK(ch_variable_backward(y, 1));
  print_grad(">>> z.grad", z);
  ch_variable_release(x2);
  ch_variable_release(d);
  ch_variable_release(z);
  ch_variable_release(y);
  ch_variable_release(x);
  ch_array_release(xa);

  /* x = Variable(np.array([[1, 2, 3], [4, 5, 6]], dtype=np.float32)); y.grad = ones */
  CHECK(ch_array_new(&xa, CH_FLOAT32, two_by_three, 2, x23, ch_device_cpu()));
  CHECK(ch_variable_new(&x, xa, 0));
  y = polynomial(x);
  CHECK(ch_array_new_full(&ones, CH_FLOAT32, two_by_three, 2, 1.0, ch_device_cpu()));
  CHECK(ch_variable_set_grad(y, ones));
  CHECK(ch_variable_backward(y, 0));
  print_grad(">>> x.grad", x);
  ch_array_release(ones);
  ch_variable_release(y);
  ch_variable_release(x);
  ch_array_release(xa);

  /* 1.4: MulAdd as a user-defined function, checked against numerical gradients. */
  {
    ch_function_def def = {0};
    ch_function* muladd;
    ch_array* in[3];
    int i;
    def.version = CH_FUNCTION_DEF_VERSION;
    def.name = "MulAdd";
    def.forward = muladd_forward;
    def.backward = muladd_backward;
    CHECK(ch_function_new(&muladd, &def));
    for (i = 0; i < 3; ++i) {
      float v[6] = {0.5f * i - 1, 0.25f, 1.5f, -0.75f, 2.0f - i, 0.1f * i};
      CHECK(ch_array_new(&in[i], CH_FLOAT32, two_by_three, 2, v, ch_device_cpu()));
    }
    CHECK(ch_check_backward(muladd, in, 3, NULL, 0, 1e-2, 1e-3, 1e-3));
    printf("\nMulAdd (w = x * y + z) passes check_backward\n");
    for (i = 0; i < 3; ++i) ch_array_release(in[i]);
    ch_function_release(muladd);
  }

  if (ch_debug_live_handles() != 0) {
    ch_debug_report_live_handles();
    return 1;
  }
  return 0;
}
