/*
 * Gradients of gradients through the C API:
 *  1. A Hessian-vector product of a small MLP, f(W) = sum(tanh(x W) w2):
 *     g = ch_grad(f, W) with enable_double_backprop, then H v = ch_grad(<g, v>, W),
 *     compared with finite differences of gradients.
 *  2. A WGAN-GP-style gradient penalty: a critic D(x) = sum(tanh(x W) w2) is
 *     trained by gradient steps on W to make |dD/dx| one at sample points,
 *     P(W) = mean((|dD/dx|_row - 1)^2); prints the penalty as it falls.
 * Exits with status 1 on any failure (an HVP mismatch or a penalty that does
 * not fall included) and 2 if handles leaked.
 */
#include <ch/ch.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#define CHECK(call)                                                                                \
  do {                                                                                             \
    ch_status status_ = (call);                                                                    \
    if (status_ != CH_OK) {                                                                        \
      fprintf(stderr, "%s failed: %s (%s)\n", #call, ch_error_message(), ch_status_name(status_)); \
      exit(1);                                                                                     \
    }                                                                                              \
  } while (0)

static ch_variable* var(const double* v, int64_t rows, int64_t cols) {
  const int64_t shape[2] = {rows, cols};
  ch_array* a = NULL;
  ch_variable* x = NULL;
  CHECK(ch_array_new(&a, CH_FLOAT64, shape, 2, v, ch_device_cpu()));
  CHECK(ch_variable_new(&x, a, 0));
  CHECK(ch_array_release(a));
  return x;
}

static void read_data(const ch_variable* v, double* out, size_t n) {
  ch_array* a = NULL;
  CHECK(ch_variable_data(&a, v));
  CHECK(ch_array_read(a, out, n * sizeof(double)));
  CHECK(ch_array_release(a));
}

static const double kX[6] = {0.5, -0.2, -0.7, 0.4, 0.1, 0.9}; /* 3 points in 2-D */
static const double kW2[4] = {0.8, -0.6, 0.4, 1.1};

/* sum(tanh(x W) w2) for x (3, 2), W (2, 4). */
static ch_variable* critic(ch_variable* x, ch_variable* W) {
  ch_variable *w2 = var(kW2, 4, 1), *h = NULL, *t = NULL, *o = NULL, *d = NULL;
  CHECK(ch_functions_matmul(&h, x, W, 0, 0));
  CHECK(ch_functions_tanh(&t, h));
  CHECK(ch_functions_matmul(&o, t, w2, 0, 0));
  CHECK(ch_functions_sum(&d, o));
  ch_variable* tmp[] = {w2, h, t, o};
  for (int i = 0; i < 4; ++i) CHECK(ch_variable_release(tmp[i]));
  return d;
}

/* d/dW of f, as an array in g (8 values); f is the critic at kX. */
static void grad_of_critic(const double* w, double* g) {
  ch_variable *W = var(w, 2, 4), *x = var(kX, 3, 2), *d = critic(x, W), *gw = NULL;
  CHECK(ch_grad(&gw, &d, 1, &W, 1, NULL, NULL));
  read_data(gw, g, 8);
  ch_variable* tmp[] = {W, x, d, gw};
  for (int i = 0; i < 4; ++i) CHECK(ch_variable_release(tmp[i]));
}

static int hessian_vector_product(void) {
  double w[8], v[8], hv[8];
  for (int i = 0; i < 8; ++i) {
    w[i] = -0.9 + 0.25 * i;
    v[i] = 0.3 - 0.07 * i;
  }
  ch_variable *W = var(w, 2, 4), *x = var(kX, 3, 2), *d = critic(x, W), *g = NULL;
  ch_backward_options opt = CH_BACKWARD_OPTIONS_INIT;
  opt.enable_double_backprop = 1;
  CHECK(ch_grad(&g, &d, 1, &W, 1, NULL, &opt));
  ch_variable *vv = var(v, 2, 4), *gv = NULL, *s = NULL, *h = NULL;
  CHECK(ch_functions_mul(&gv, g, vv));
  CHECK(ch_functions_sum(&s, gv));
  CHECK(ch_grad(&h, &s, 1, &W, 1, NULL, NULL));
  read_data(h, hv, 8);
  ch_variable* tmp[] = {W, x, d, g, vv, gv, s, h};
  for (int i = 0; i < 8; ++i) CHECK(ch_variable_release(tmp[i]));
  /* (grad(w + e v) - grad(w - e v)) / 2e */
  const double e = 1e-5;
  double wp[8], wm[8], gp[8], gm[8], worst = 0;
  for (int i = 0; i < 8; ++i) {
    wp[i] = w[i] + e * v[i];
    wm[i] = w[i] - e * v[i];
  }
  grad_of_critic(wp, gp);
  grad_of_critic(wm, gm);
  for (int i = 0; i < 8; ++i) {
    const double fd = (gp[i] - gm[i]) / (2 * e), diff = fabs(fd - hv[i]);
    if (diff > worst) worst = diff;
  }
  printf("Hessian-vector product: largest difference from finite differences %.2e\n", worst);
  return worst < 1e-6 ? 0 : 1;
}

/* P(W) = sum_rows((|dD/dx|_row - 1)^2) / 3 */
static ch_variable* penalty(ch_variable* W) {
  ch_variable *x = var(kX, 3, 2), *d = critic(x, W), *g = NULL, *g2 = NULL, *n2 = NULL, *n = NULL,
              *m = NULL, *m2 = NULL, *s = NULL, *p = NULL;
  ch_backward_options opt = CH_BACKWARD_OPTIONS_INIT;
  opt.enable_double_backprop = 1;
  CHECK(ch_grad(&g, &d, 1, &x, 1, NULL, &opt));
  CHECK(ch_functions_mul(&g2, g, g));
  CHECK(ch_functions_sum_axis(&n2, g2, 1, 0));
  CHECK(ch_functions_pow_scalar(&n, n2, 0.5));
  CHECK(ch_functions_sub_scalar(&m, n, 1.0));
  CHECK(ch_functions_mul(&m2, m, m));
  CHECK(ch_functions_sum(&s, m2));
  CHECK(ch_functions_div_scalar(&p, s, 3.0));
  ch_variable* tmp[] = {x, d, g, g2, n2, n, m, m2, s};
  for (int i = 0; i < 9; ++i) CHECK(ch_variable_release(tmp[i]));
  return p;
}

static int gradient_penalty_training(void) {
  double w[8], first = 0, last = 0;
  for (int i = 0; i < 8; ++i) w[i] = -0.9 + 0.3 * i;
  for (int step = 0; step <= 30; ++step) {
    ch_variable *W = var(w, 2, 4), *p = penalty(W);
    double value, g[8];
    read_data(p, &value, 1);
    CHECK(ch_variable_backward(p, 0));
    ch_array* ga = NULL;
    CHECK(ch_variable_grad(&ga, W));
    CHECK(ch_array_read(ga, g, sizeof g));
    CHECK(ch_array_release(ga));
    for (int i = 0; i < 8; ++i) w[i] -= 0.2 * g[i];
    if (step == 0) first = value;
    last = value;
    if (step % 10 == 0) printf("step %2d: gradient penalty %.6f\n", step, value);
    CHECK(ch_variable_release(W));
    CHECK(ch_variable_release(p));
  }
  return last < 0.5 * first ? 0 : 1;
}

int main(void) {
  const int64_t live = ch_debug_live_handles();
  int failed = hessian_vector_product();
  failed |= gradient_penalty_training();
  if (failed) {
    fprintf(stderr, "double_backprop: a check failed\n");
    return 1;
  }
  if (ch_debug_live_handles() != live) {
    ch_debug_report_live_handles();
    return 2;
  }
  printf("ok\n");
  return 0;
}
