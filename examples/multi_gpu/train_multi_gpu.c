/*
 * The seed's multi-GPU examples (Chainer 1.0 tutorial, sections 1.3.4 and
 * 1.3.5) in C, on two CUDA devices:
 *
 *   --mode model  model-parallel: two towers of six Linear layers, tower 0
 *                 on cuda:0 and tower 1 on cuda:1, exchanging activations
 *                 through F.copy after the third and the sixth layer;
 *   --mode data   data-parallel: a 784-H-H-10 MLP on cuda:0 (the master) and
 *                 a copy on cuda:1, half of each mini-batch on each, the
 *                 copy's gradients accumulated into the master's before the
 *                 update, the master's parameters copied back after it.
 *
 *   train_multi_gpu [--mode model|data] [--epochs 2] [--hidden 100] [--batch 100]
 *                   [--data DIR] [--limit N] [--lr 0.05] [--seed 1]
 *
 * Data: Fashion-MNIST (IDX files) from --data, or, with --data synthetic (the
 * default when no data directory exists), N random images whose labels are
 * a fixed linear function of them, so that training visibly learns. Prints
 * the mean loss and accuracy of each epoch; exits 1 if the loss did not fall.
 * Runs on the emulated devices of the -Dcuda-emulation build (tests/gpu).
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime, in example_util.h */
#include <ch/ch.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(call)                                                                       \
  do {                                                                                    \
    ch_status status_ = (call);                                                           \
    if (status_ != CH_OK) {                                                               \
      fprintf(stderr, "train_multi_gpu: %s failed: %s (%s)\n", #call, ch_error_message(), \
              ch_status_name(status_));                                                   \
      exit(1);                                                                            \
    }                                                                                     \
  } while (0)

#include "../common/example_util.h"

enum { kIn = 784, kOut = 10 };

typedef struct Options {
  const char* mode;
  int epochs, hidden, batch;
  const char* data;
  int64_t limit;
  double lr;
  uint64_t seed;
} Options;

static Options parse(int argc, char** argv) {
  Options o = {"model", 2, 100, 100, "/usr/share/datasets/fashion-mnist", 1000, 0.05, 1};
  int i;
  for (i = 1; i + 1 < argc; i += 2) {
    const char *a = argv[i], *v = argv[i + 1];
    if (!strcmp(a, "--mode"))
      o.mode = v;
    else if (!strcmp(a, "--epochs"))
      o.epochs = atoi(v);
    else if (!strcmp(a, "--hidden"))
      o.hidden = atoi(v);
    else if (!strcmp(a, "--batch"))
      o.batch = atoi(v);
    else if (!strcmp(a, "--data"))
      o.data = v;
    else if (!strcmp(a, "--limit"))
      o.limit = atoll(v);
    else if (!strcmp(a, "--lr"))
      o.lr = atof(v);
    else if (!strcmp(a, "--seed"))
      o.seed = strtoull(v, NULL, 10);
    else {
      fprintf(stderr, "train_multi_gpu: unknown option %s\n", a);
      exit(2);
    }
  }
  if (i < argc || (strcmp(o.mode, "model") && strcmp(o.mode, "data")) || o.epochs < 1 ||
      o.hidden < 1 || o.batch < 2 || o.limit < o.batch) {
    fprintf(stderr,
            "usage: train_multi_gpu [--mode model|data] [--epochs N >= 1] [--hidden N] "
            "[--batch N >= 2] [--data DIR|synthetic] [--limit N >= batch] [--lr X] [--seed N]\n");
    exit(2);
  }
  return o;
}

static float uniform01(void) { return (float)((rng_next() >> 40) * (1.0 / 16777216.0)); }

/* Images (n, 784) and labels (n,) in host memory. */
typedef struct Data {
  float* x;
  int32_t* t;
  int64_t n;
} Data;

static Data synthetic(int64_t n) {
  Data d = {malloc(sizeof(float) * kIn * (size_t)n), malloc(sizeof(int32_t) * (size_t)n), n};
  float* w = malloc(sizeof(float) * kIn * kOut);
  int64_t i, j, k;
  if (!d.x || !d.t || !w) exit(1);
  for (i = 0; i < kIn * kOut; ++i) w[i] = uniform01() - 0.5f;
  for (i = 0; i < n; ++i) {
    float best = -1e30f;
    for (j = 0; j < kIn; ++j) d.x[i * kIn + j] = uniform01();
    for (k = 0; k < kOut; ++k) {
      float s = 0;
      for (j = 0; j < kIn; ++j) s += w[k * kIn + j] * (d.x[i * kIn + j] - 0.5f);
      if (s > best) best = s, d.t[i] = (int32_t)k;
    }
  }
  free(w);
  return d;
}

static Data load(const char* dir, int64_t limit) {
  char path[4096];
  ch_array *images = NULL, *labels = NULL;
  Data d;
  FILE* probe;
  snprintf(path, sizeof path, "%s/train-images-idx3-ubyte.gz", dir);
  probe = strcmp(dir, "synthetic") ? fopen(path, "rb") : NULL;
  if (!probe) return synthetic(limit);
  fclose(probe);
  CHECK(ch_datasets_read_idx(&images, path, CH_FLOAT32, 1.0 / 255.0));
  snprintf(path, sizeof path, "%s/train-labels-idx1-ubyte.gz", dir);
  CHECK(ch_datasets_read_idx(&labels, path, CH_INT32, 1.0));
  d.n = ch_array_size(labels) < limit ? ch_array_size(labels) : limit;
  d.x = malloc(sizeof(float) * kIn * (size_t)d.n);
  d.t = malloc(sizeof(int32_t) * (size_t)d.n);
  if (!d.x || !d.t) exit(1);
  memcpy(d.x, ch_array_data(images), sizeof(float) * kIn * (size_t)d.n);
  memcpy(d.t, ch_array_data(labels), sizeof(int32_t) * (size_t)d.n);
  ch_array_release(images);
  ch_array_release(labels);
  return d;
}

/* A variable over rows [from, from + n) of the data, copied to `device`. */
static ch_variable* var_x(const Data* d, int64_t from, int64_t n, ch_device device) {
  const int64_t shape[2] = {n, kIn};
  ch_array* a = NULL;
  ch_variable* v = NULL;
  CHECK(ch_array_new(&a, CH_FLOAT32, shape, 2, d->x + from * kIn, device));
  CHECK(ch_variable_new(&v, a, 0));
  CHECK(ch_variable_set_requires_grad(v, 0));
  ch_array_release(a);
  return v;
}
static ch_variable* var_t(const Data* d, int64_t from, int64_t n, ch_device device) {
  const int64_t shape[1] = {n};
  ch_array* a = NULL;
  ch_variable* v = NULL;
  CHECK(ch_array_new(&a, CH_INT32, shape, 1, d->t + from, device));
  CHECK(ch_variable_new(&v, a, 0));
  ch_array_release(a);
  return v;
}

/* A FunctionSet of Linear layers "l1".."lN" with the given sizes. */
static ch_function_set* linear_stack(const int64_t* sizes, int layers, ch_function** fs) {
  ch_function_set* set = NULL;
  int i;
  CHECK(ch_function_set_new(&set));
  for (i = 0; i < layers; ++i) {
    char name[16];
    snprintf(name, sizeof name, "l%d", i + 1);
    CHECK(ch_functions_linear_new(&fs[i], sizes[i], sizes[i + 1], CH_FLOAT32, 1.0, 0.0, 0, NULL,
                                  NULL));
    CHECK(ch_function_set_add_function(set, name, fs[i]));
  }
  return set;
}

/* y = f(x); x is released (the caller's reference moves into the graph). */
static ch_variable* linear(ch_function* f, ch_variable* x) {
  ch_variable* y = NULL;
  CHECK(ch_function_apply(f, &x, 1, &y, 1, NULL));
  ch_variable_release(x);
  return y;
}
static ch_variable* relu(ch_variable* x) {
  ch_variable* y = NULL;
  CHECK(ch_functions_relu(&y, x));
  ch_variable_release(x);
  return y;
}
static ch_variable* copy_to(ch_variable* x, ch_device d) {
  ch_variable* y = NULL;
  CHECK(ch_functions_copy(&y, x, d));
  return y;
}
static ch_variable* add(ch_variable* a, ch_variable* b) {
  ch_variable* y = NULL;
  CHECK(ch_functions_add(&y, a, b));
  ch_variable_release(a);
  ch_variable_release(b);
  return y;
}
static double scalar(ch_variable* v) {
  ch_array* a = NULL;
  double d = 0;
  CHECK(ch_variable_data(&a, v));
  CHECK(ch_array_get(&d, a, 0));
  ch_array_release(a);
  return d;
}

/* Loss and accuracy of scores y for labels t (both released). */
static void loss_acc(ch_variable* y, ch_variable* t, ch_variable** loss, double* acc) {
  ch_variable* a = NULL;
  CHECK(ch_functions_softmax_cross_entropy(loss, y, t));
  CHECK(ch_functions_accuracy(&a, y, t));
  *acc = scalar(a);
  ch_variable_release(a);
  ch_variable_release(y);
  ch_variable_release(t);
}

/* Section 1.3.4: the two towers' forward for one mini-batch. */
static ch_variable* model_parallel_forward(ch_function* const* g0, ch_function* const* g1,
                                           const Data* d, int64_t from, int64_t n, double* acc) {
  const ch_device d0 = ch_device_cuda(0), d1 = ch_device_cuda(1);
  ch_variable *h0 = var_x(d, from, n, d0), *h1 = var_x(d, from, n, d1), *loss = NULL;
  int i;
  for (i = 0; i < 3; ++i) {
    h0 = relu(linear(g0[i], h0));
    h1 = relu(linear(g1[i], h1));
  }
  /* Synchronize: h3_0 += copy(h3_1, 0); h3_1 = copy(h3_0, 1) */
  h0 = add(h0, copy_to(h1, d0));
  ch_variable_release(h1);
  h1 = copy_to(h0, d1);
  for (i = 3; i < 6; ++i) {
    h0 = relu(linear(g0[i], h0));
    h1 = relu(linear(g1[i], h1));
  }
  h0 = add(h0, copy_to(h1, d0));
  ch_variable_release(h1);
  loss_acc(h0, var_t(d, from, n, d0), &loss, acc);
  return loss;
}

/* Section 1.3.5: the MLP's forward on one device's half of the batch. */
static ch_variable* mlp_forward(ch_function* const* l, const Data* d, int64_t from, int64_t n,
                                ch_device device, double* acc) {
  ch_variable *h = var_x(d, from, n, device), *loss = NULL;
  h = relu(linear(l[0], h));
  h = relu(linear(l[1], h));
  h = linear(l[2], h);
  loss_acc(h, var_t(d, from, n, device), &loss, acc);
  return loss;
}

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  const int model_mode = !strcmp(o.mode, "model");
  const int64_t h = o.hidden;
  const int64_t tower[7] = {kIn, h, h, 2 * h, h, h, kOut}, mlp[4] = {kIn, h, h, kOut};
  ch_function *g0[6] = {0}, *g1[6] = {0};
  ch_function_set *set0, *set1, *model;
  ch_optimizer* opt = NULL;
  Data data;
  double first = 0, last = 0;
  int epoch, i;

  if (ch_cuda_device_count() < 2) {
    fprintf(stderr, "train_multi_gpu: needs two CUDA devices, found %d (%s)\n",
            (int)ch_cuda_device_count(), ch_cuda_unavailable_reason());
    return 1;
  }
  ch_config_seed(o.seed);
  rng_state ^= o.seed * 0x9E3779B97F4A7C15ull;
  data = load(o.data, o.limit);

  /* model.gpu0 / model.gpu1 (towers), or model_0 / model_1 (replicas). */
  set0 = linear_stack(model_mode ? tower : mlp, model_mode ? 6 : 3, g0);
  set1 = linear_stack(model_mode ? tower : mlp, model_mode ? 6 : 3, g1);
  if (!model_mode) CHECK(ch_function_set_copy_parameters_from(set1, set0));
  CHECK(ch_function_set_to_gpu(set0, ch_device_cuda(0)));
  CHECK(ch_function_set_to_gpu(set1, ch_device_cuda(1)));
  CHECK(ch_function_set_new(&model));
  CHECK(ch_function_set_add_set(model, "gpu0", set0));
  if (model_mode) CHECK(ch_function_set_add_set(model, "gpu1", set1));
  CHECK(ch_optimizer_sgd_new(&opt, o.lr));
  CHECK(ch_optimizer_setup(opt, model));
  printf("%s-parallel on cuda:0 and cuda:1: %lld samples, hidden %d, batch %d\n",
         model_mode ? "model" : "data", (long long)data.n, o.hidden, o.batch);

  for (epoch = 1; epoch <= o.epochs; ++epoch) {
    double sum_loss = 0, sum_acc = 0;
    int64_t seen = 0, from;
    for (from = 0; from + o.batch <= data.n; from += o.batch) {
      const int64_t n = o.batch, half = o.batch / 2;
      double acc0 = 0, acc1 = 0;
      CHECK(ch_optimizer_zero_grads(opt));
      if (model_mode) {
        ch_variable* loss = model_parallel_forward(g0, g1, &data, from, n, &acc0);
        CHECK(ch_variable_backward(loss, 0));
        sum_loss += scalar(loss) * (double)n;
        sum_acc += acc0 * (double)n;
        ch_variable_release(loss);
      } else {
        ch_variable *loss0, *loss1;
        size_t k, count = ch_function_set_parameter_count(set1);
        ch_array** grads1 = malloc(sizeof(ch_array*) * count);
        if (!grads1) return 1;
        for (k = 0; k < count; ++k) {
          CHECK(ch_function_set_parameter(NULL, &grads1[k], NULL, set1, k));
          CHECK(ch_array_fill(grads1[k], 0.0));
        }
        loss0 = mlp_forward(g0, &data, from, half, ch_device_cuda(0), &acc0);
        CHECK(ch_variable_backward(loss0, 0));
        loss1 = mlp_forward(g1, &data, from + half, n - half, ch_device_cuda(1), &acc1);
        CHECK(ch_variable_backward(loss1, 0));
        CHECK(ch_optimizer_accumulate_grads(opt, grads1, count)); /* model_1.gradients */
        sum_loss += scalar(loss0) * (double)half + scalar(loss1) * (double)(n - half);
        sum_acc += acc0 * (double)half + acc1 * (double)(n - half);
        for (k = 0; k < count; ++k) ch_array_release(grads1[k]);
        free(grads1);
        ch_variable_release(loss0);
        ch_variable_release(loss1);
      }
      CHECK(ch_optimizer_update(opt));
      if (!model_mode) CHECK(ch_function_set_copy_parameters_from(set1, set0));
      seen += n;
    }
    printf("epoch %d  loss %.4f  accuracy %.4f\n", epoch, sum_loss / (double)seen,
           sum_acc / (double)seen);
    if (epoch == 1) first = sum_loss / (double)seen;
    last = sum_loss / (double)seen;
  }

  ch_optimizer_release(opt);
  for (i = 0; i < 6; ++i) {
    ch_function_release(g0[i]);
    ch_function_release(g1[i]);
  }
  ch_function_set_release(set0);
  ch_function_set_release(set1);
  ch_function_set_release(model);
  free(data.x);
  free(data.t);
  if (o.epochs > 1 && !(last < first)) {
    fprintf(stderr, "train_multi_gpu: the loss did not fall (%.4f -> %.4f)\n", first, last);
    return 1;
  }
  return 0;
}
