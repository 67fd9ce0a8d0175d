/* A fixed amount of engine work, for comparing two builds of chainerc by
 * instruction counts (valgrind --tool=callgrind), which stay repeatable on a
 * loaded machine where wall-clock timings do not.
 *
 *   instructions chain N   N iterations of bench/overhead's chain: ten
 *                          element-wise ops on 1-element float32 variables,
 *                          forward with history, backward, release.
 *   instructions step N    N forward+backward passes of a 784-100-10 MLP
 *                          with softmax cross entropy on a batch of 32
 *                          (bench/train's model, without the optimizer).
 *
 * Per-iteration counts are the difference of two runs (N and 0) over N, so
 * process start-up cancels. Built against the public C API only, so the same
 * source compiles against an older build to compare with.
 * Usage: instructions chain|step N */
#include <ch/ch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void check(ch_status s, const char* what) {
  if (s != CH_OK) {
    fprintf(stderr, "instructions: %s failed (%d): %s\n", what, (int)s, ch_error_message());
    exit(1);
  }
}

static ch_variable* variable_of(const int64_t* shape, int32_t ndim, const void* data,
                                ch_dtype dtype) {
  ch_device cpu = {CH_DEVICE_CPU, 0};
  ch_array* a = NULL;
  ch_variable* v = NULL;
  check(ch_array_new(&a, dtype, shape, ndim, data, cpu), "ch_array_new");
  check(ch_variable_new(&v, a, 0), "ch_variable_new");
  ch_array_release(a);
  return v;
}

static void chain(long n) {
  const int64_t shape[1] = {1};
  const float one = 0.5f;
  for (long i = 0; i < n; ++i) {
    ch_variable* x = variable_of(shape, 1, &one, CH_FLOAT32);
    ch_variable* h = ch_variable_retain(x);
    for (int k = 0; k < 10; ++k) {
      ch_variable* y = NULL;
      switch (k % 4) {
        case 0:
          check(ch_functions_tanh(&y, h), "tanh");
          break;
        case 1:
          check(ch_functions_mul(&y, h, x), "mul");
          break;
        case 2:
          check(ch_functions_sigmoid(&y, h), "sigmoid");
          break;
        default:
          check(ch_functions_add(&y, h, x), "add");
          break;
      }
      ch_variable_release(h);
      h = y;
    }
    ch_variable* loss = NULL;
    check(ch_functions_sum(&loss, h), "sum");
    check(ch_variable_backward(loss, 0), "backward");
    ch_variable_release(loss);
    ch_variable_release(h);
    ch_variable_release(x);
  }
}

static void step(long n) {
  enum { B = 32, IN = 784, HID = 100, OUT = 10 };
  ch_function* l1 = NULL;
  ch_function* l2 = NULL;
  check(ch_functions_linear_new(&l1, IN, HID, CH_FLOAT32, 1.0, 0.0, 0, NULL, NULL), "linear");
  check(ch_functions_linear_new(&l2, HID, OUT, CH_FLOAT32, 1.0, 0.0, 0, NULL, NULL), "linear");
  float* xs = malloc(sizeof(float) * B * IN);
  int32_t ts[B];
  for (int i = 0; i < B * IN; ++i) xs[i] = (float)((i * 7919) % 1000) / 1000.0f;
  for (int i = 0; i < B; ++i) ts[i] = i % OUT;
  const int64_t xshape[2] = {B, IN};
  const int64_t tshape[1] = {B};
  for (long i = 0; i < n; ++i) {
    ch_variable* x = variable_of(xshape, 2, xs, CH_FLOAT32);
    ch_variable* t = variable_of(tshape, 1, ts, CH_INT32);
    ch_variable *h1 = NULL, *a1 = NULL, *h2 = NULL, *loss = NULL;
    check(ch_function_apply(l1, &x, 1, &h1, 1, NULL), "l1");
    check(ch_functions_relu(&a1, h1), "relu");
    check(ch_function_apply(l2, &a1, 1, &h2, 1, NULL), "l2");
    check(ch_functions_softmax_cross_entropy(&loss, h2, t), "softmax_cross_entropy");
    check(ch_variable_backward(loss, 0), "backward");
    ch_variable_release(loss);
    ch_variable_release(h2);
    ch_variable_release(a1);
    ch_variable_release(h1);
    ch_variable_release(t);
    ch_variable_release(x);
  }
  free(xs);
  ch_function_release(l1);
  ch_function_release(l2);
}

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: instructions chain|step N\n");
    return 2;
  }
  long n = strtol(argv[2], NULL, 10);
  if (strcmp(argv[1], "chain") == 0) {
    chain(n);
  } else if (strcmp(argv[1], "step") == 0) {
    step(n);
  } else {
    fprintf(stderr, "usage: instructions chain|step N\n");
    return 2;
  }
  return 0;
}
