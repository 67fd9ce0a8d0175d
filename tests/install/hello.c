/* Built outside the repository against the installed libchainerc-dev
 * (scripts/packaging.sh): `cc hello.c $(pkg-config --cflags --libs chainerc)`,
 * and with --static. y = sum(x * x) at x = (1, 2, 3): y = 14, dy/dx = 2x. */
#include <ch/ch.h>
#include <math.h>
#include <stdio.h>

#define CHECK(call)                                                  \
  do {                                                               \
    if ((call) != CH_OK) {                                           \
      fprintf(stderr, "%s failed: %s\n", #call, ch_error_message()); \
      return 1;                                                      \
    }                                                                \
  } while (0)

int main(void) {
  const float xs[3] = {1.0f, 2.0f, 3.0f};
  const int64_t shape[1] = {3};
  ch_array* a = NULL;
  ch_variable *x = NULL, *xx = NULL, *y = NULL;
  ch_array *ydata = NULL, *grad = NULL;
  CHECK(ch_array_new(&a, CH_FLOAT32, shape, 1, xs, ch_device_cpu()));
  CHECK(ch_variable_new(&x, a, 0));
  CHECK(ch_functions_mul(&xx, x, x));
  CHECK(ch_functions_sum(&y, xx));
  CHECK(ch_variable_backward(y, 0));
  CHECK(ch_variable_data(&ydata, y));
  CHECK(ch_variable_grad(&grad, x));
  const float* yv = (const float*)ch_array_data(ydata);
  const float* g = (const float*)ch_array_data(grad);
  int bad = fabsf(yv[0] - 14.0f) > 1e-5f;
  for (int i = 0; i < 3; ++i) bad |= fabsf(g[i] - 2.0f * xs[i]) > 1e-5f;
  /* Bad input is a status and a message, not a crash. */
  ch_array* none = NULL;
  const int64_t negative[1] = {-1};
  if (ch_array_new(&none, CH_FLOAT32, negative, 1, xs, ch_device_cpu()) == CH_OK ||
      ch_error_message()[0] == '\0')
    bad = 1;
  printf("y=%g grad=(%g, %g, %g)%s\n", yv[0], g[0], g[1], g[2], bad ? " WRONG" : "");
  ch_array_release(grad);
  ch_array_release(ydata);
  ch_variable_release(y);
  ch_variable_release(xx);
  ch_variable_release(x);
  ch_array_release(a);
  return bad;
}
