/*
 * What the MNIST examples share (examples/mnist/train_mnist.c and
 * examples/distributed/train_mnist_mpi.c): shuffling with the generator of
 * example_util.h (whose clock and scalar_of come along), the IDX data set,
 * the seed's 784-H-H-10 MLP with its forward(), and mini-batches as
 * variables. C99, header-only (static functions).
 *
 * The including file defines, before including it, EXAMPLE_NAME (its name,
 * for messages) and CHECK(call) (what to do when a ch_* call fails).
 */
#ifndef CHAINERC_EXAMPLES_MNIST_MLP_H
#define CHAINERC_EXAMPLES_MNIST_MLP_H

#include <ch/ch.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "example_util.h"

static void shuffle(int64_t* perm, int64_t n) {
  int64_t i;
  for (i = n - 1; i > 0; --i) {
    int64_t j = (int64_t)(rng_next() % (uint64_t)(i + 1));
    int64_t t = perm[i];
    perm[i] = perm[j];
    perm[j] = t;
  }
}

/* A data set: images (N, 784) float32 in [0, 1] and labels (N,) int32. */
typedef struct Dataset {
  ch_array* x;
  ch_array* t;
  int64_t n;
} Dataset;

static Dataset load(const char* dir, const char* prefix, int64_t limit) {
  char path[4096];
  Dataset d;
  ch_array* images;
  int64_t flat[2];
  snprintf(path, sizeof path, "%s/%s-images-idx3-ubyte.gz", dir, prefix);
  CHECK(ch_datasets_read_idx(&images, path, CH_FLOAT32, 1.0 / 255.0));
  snprintf(path, sizeof path, "%s/%s-labels-idx1-ubyte.gz", dir, prefix);
  CHECK(ch_datasets_read_idx(&d.t, path, CH_INT32, 1.0));
  d.n = ch_array_shape(images)[0];
  if (ch_array_size(d.t) != d.n) {
    fprintf(stderr, EXAMPLE_NAME ": %s has %lld images but %lld labels\n", prefix, (long long)d.n,
            (long long)ch_array_size(d.t));
    exit(1);
  }
  flat[0] = d.n;
  flat[1] = ch_array_size(images) / d.n;
  CHECK(ch_array_reshape(&d.x, images, flat, 2));
  ch_array_release(images);
  if (limit > 0 && limit < d.n) d.n = limit;
  return d;
}

typedef struct Model {
  ch_function_set* set;
  ch_function* l[3];
} Model;

static Model make_model(int64_t hidden) {
  Model m;
  static const char* names[3] = {"l1", "l2", "l3"};
  const int64_t in[3] = {784, hidden, hidden}, out[3] = {hidden, hidden, 10};
  int i;
  CHECK(ch_function_set_new(&m.set));
  for (i = 0; i < 3; ++i) {
    CHECK(ch_functions_linear_new(&m.l[i], in[i], out[i], CH_FLOAT32, 1.0, 0.0, 0, NULL, NULL));
    CHECK(ch_function_set_add_function(m.set, names[i], m.l[i]));
  }
  return m;
}

static void free_model(Model* m) {
  int i;
  for (i = 0; i < 3; ++i) ch_function_release(m->l[i]);
  ch_function_set_release(m->set);
}

static ch_variable* apply(ch_function* f, ch_variable* x) {
  ch_variable* y = NULL;
  CHECK(ch_function_apply(f, &x, 1, &y, 1, NULL));
  return y;
}

/* The seed's forward(): h1 = relu(l1(x)), h2 = relu(l2(h1)), y = l3(h2);
 * returns the loss and the accuracy as variables. */
static void forward(const Model* m, ch_variable* x, ch_variable* t, ch_variable** loss,
                    ch_variable** acc) {
  ch_variable *a, *h, *y;
  int i;
  ch_variable_retain(x);
  h = x;
  for (i = 0; i < 2; ++i) {
    a = apply(m->l[i], h);
    ch_variable_release(h);
    CHECK(ch_functions_relu(&h, a));
    ch_variable_release(a);
  }
  y = apply(m->l[2], h);
  ch_variable_release(h);
  CHECK(ch_functions_softmax_cross_entropy(loss, y, t));
  CHECK(ch_functions_accuracy(acc, y, t));
  ch_variable_release(y);
}

/* Copy the rows idx[0..n) of the data set into a batch's buffers. */
static void gather(const Dataset* d, const int64_t* idx, int64_t n, float* xb, int32_t* tb) {
  const float* x = (const float*)ch_array_data(d->x);
  const int32_t* t = (const int32_t*)ch_array_data(d->t);
  int64_t i;
  for (i = 0; i < n; ++i) {
    memcpy(xb + i * 784, x + idx[i] * 784, 784 * sizeof(float));
    tb[i] = t[idx[i]];
  }
}

/* Replaces *a by its copy on `device` (nothing to do on the CPU). */
static void move_to(ch_array** a, ch_device device) {
  ch_array* moved;
  if (device.type == CH_DEVICE_CPU) return;
  CHECK(ch_array_to_device(&moved, *a, device));
  ch_array_release(*a);
  *a = moved;
}

/* Variables over caller-owned batch buffers (zero-copy on the CPU, a copy on
 * a GPU). */
static void batch_vars(float* xb, int32_t* tb, int64_t n, int is_volatile, ch_device device,
                       ch_variable** x, ch_variable** t) {
  ch_array *xa, *ta;
  const int64_t xs[2] = {n, 784}, ts[1] = {n};
  CHECK(ch_array_wrap(&xa, CH_FLOAT32, xs, 2, xb, ch_device_cpu(), NULL, NULL));
  CHECK(ch_array_wrap(&ta, CH_INT32, ts, 1, tb, ch_device_cpu(), NULL, NULL));
  move_to(&xa, device);
  move_to(&ta, device);
  CHECK(ch_variable_new(x, xa, is_volatile));
  CHECK(ch_variable_new(t, ta, is_volatile));
  /* Data needs no gradient: the first layer then skips computing one. */
  CHECK(ch_variable_set_requires_grad(*x, 0));
  CHECK(ch_variable_set_requires_grad(*t, 0));
  ch_array_release(xa);
  ch_array_release(ta);
}

#endif /* CHAINERC_EXAMPLES_MNIST_MLP_H */
