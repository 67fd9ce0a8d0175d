/* A plain C program built outside the project against the installed chainerc,
 * with nothing but `pkg-config --cflags --libs chainerc` (shared) or
 * `pkg-config --cflags --static --libs chainerc` (static): y = x * x, backward,
 * and x.grad must be 2x. Every handle is released; none may be left alive. */
#include <ch/ch.h>

#include <stdio.h>

#define CHECK(call)                                                              \
  do {                                                                           \
    ch_status check_status_ = (call);                                            \
    if (check_status_ != CH_OK) {                                                \
      fprintf(stderr, "%s:%d: %s failed: %s: %s\n", __FILE__, __LINE__, #call,   \
              ch_status_name(check_status_), ch_error_message());                \
      return 1;                                                                  \
    }                                                                            \
  } while (0)

int main(void) {
  static const double xs[4] = {-1.5, 0.0, 2.0, 3.25};
  const int64_t shape[1] = {4};
  ch_array* x_data = NULL;
  ch_array* ones = NULL;
  ch_array* gx = NULL;
  ch_variable* x = NULL;
  ch_variable* y = NULL;
  int i;
  int failures = 0;

  if (ch_version() != CH_VERSION) {
    fprintf(stderr, "header version %d, library version %d\n", CH_VERSION, (int)ch_version());
    return 1;
  }
  CHECK(ch_array_new(&x_data, CH_FLOAT64, shape, 1, xs, ch_device_cpu()));
  CHECK(ch_variable_new(&x, x_data, 0));
  CHECK(ch_functions_mul(&y, x, x));
  CHECK(ch_array_new_full(&ones, CH_FLOAT64, shape, 1, 1.0, ch_device_cpu()));
  CHECK(ch_variable_set_grad(y, ones));
  CHECK(ch_variable_backward(y, 0));
  CHECK(ch_variable_grad(&gx, x));
  if (gx == NULL) {
    fprintf(stderr, "x has no gradient after backward\n");
    return 1;
  }
  for (i = 0; i < 4; i++) {
    double got = 0.0;
    CHECK(ch_array_get(&got, gx, i));
    if (got != 2.0 * xs[i]) {
      fprintf(stderr, "x.grad[%d] = %g, expected %g\n", i, got, 2.0 * xs[i]);
      failures++;
    }
  }

  CHECK(ch_array_release(gx));
  CHECK(ch_array_release(ones));
  CHECK(ch_variable_release(y));
  CHECK(ch_variable_release(x));
  CHECK(ch_array_release(x_data));
  if (ch_debug_live_handles() != 0) {
    fprintf(stderr, "%lld handles still alive after releasing all\n",
            (long long)ch_debug_live_handles());
    ch_debug_report_live_handles();
    failures++;
  }
  if (failures != 0) return 1;
  printf("chainerc %s: y = x*x, x.grad = 2x ok\n", ch_version_string());
  return 0;
}
