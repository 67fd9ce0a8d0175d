/*
 * The seed's MNIST MLP (784-H-H-10, ReLU, softmax cross entropy) trained on
 * several processes with <ch/distributed.h>, as ChainerMN's train_mnist.py:
 * every rank holds the model, rank 0's initial parameters are broadcast,
 * the training set is scattered (each rank gets ceil(n / N) samples, see
 * ch_communicator_scatter_indices) and each rank shuffles its own share
 * every epoch; the multi-node optimizer averages the gradients over the
 * ranks before every update, so the global batch is N x --batch. Rank 0
 * prints the progress; the train and test loss/accuracy printed after each
 * epoch are summed over the ranks (allreduce), the test set being split
 * between them as well.
 *
 *   mpirun -np 2 build/examples/distributed/train_mnist_mpi [--epochs 20]
 *       [--hidden 100] [--batch 100] [--optimizer sgd|adam] [--lr 0.01]
 *       [--threads 1] [--seed 1] [--data /usr/share/datasets/fashion-mnist]
 *       [--limit N]
 *
 * --batch is per rank (ChainerMN's convention); --threads defaults to 1, one
 * process per core.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include <ch/ch.h>
#include <ch/distributed.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int g_rank = 0;

#define CHECK(call)                                                                    \
  do {                                                                                 \
    ch_status status_ = (call);                                                        \
    if (status_ != CH_OK) {                                                            \
      fprintf(stderr, "train_mnist_mpi: rank %d: %s failed: %s (%s)\n", g_rank, #call, \
              ch_error_message(), ch_status_name(status_));                            \
      exit(1); /* a non-zero exit aborts the whole job (see distributed.h) */          \
    }                                                                                  \
  } while (0)

typedef struct Options {
  int epochs, hidden, batch, threads;
  double lr;
  uint64_t seed;
  const char* optimizer;
  const char* data;
  int64_t limit;
} Options;

static void usage(FILE* f) {
  fprintf(f,
          "usage: mpirun -np N train_mnist_mpi [--epochs N] [--hidden N] [--batch N]\n"
          "           [--optimizer sgd|adam] [--lr X] [--threads N] [--seed N]\n"
          "           [--data DIR] [--limit N]\n");
}

static Options parse(int argc, char** argv) {
  Options o = {20, 100, 100, 1, 0.01, 1, "sgd", "/usr/share/datasets/fashion-mnist", 0};
  int i;
  for (i = 1; i < argc; ++i) {
    const char* a = argv[i];
    const char* v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
      usage(stdout);
      exit(0);
    }
    if (!v) {
      usage(stderr);
      exit(2);
    }
    if (!strcmp(a, "--epochs"))
      o.epochs = atoi(v);
    else if (!strcmp(a, "--hidden"))
      o.hidden = atoi(v);
    else if (!strcmp(a, "--batch"))
      o.batch = atoi(v);
    else if (!strcmp(a, "--threads"))
      o.threads = atoi(v);
    else if (!strcmp(a, "--lr"))
      o.lr = atof(v);
    else if (!strcmp(a, "--seed"))
      o.seed = strtoull(v, NULL, 10);
    else if (!strcmp(a, "--optimizer"))
      o.optimizer = v;
    else if (!strcmp(a, "--data"))
      o.data = v;
    else if (!strcmp(a, "--limit"))
      o.limit = atoll(v);
    else {
      fprintf(stderr, "train_mnist_mpi: unknown option %s\n", a);
      usage(stderr);
      exit(2);
    }
    ++i;
  }
  if (o.epochs < 0 || o.hidden < 1 || o.batch < 1 ||
      (strcmp(o.optimizer, "sgd") && strcmp(o.optimizer, "adam"))) {
    fprintf(stderr,
            "train_mnist_mpi: --epochs must be >= 0, --hidden and --batch >= 1, --optimizer "
            "sgd or adam\n");
    exit(2);
  }
  return o;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* xorshift64*: the example's own generator for shuffling, so that the order
 * depends only on --seed. */
static uint64_t rng_state = 88172645463325252ull;
static uint64_t rng_next(void) {
  rng_state ^= rng_state >> 12;
  rng_state ^= rng_state << 25;
  rng_state ^= rng_state >> 27;
  return rng_state * 2685821657736338717ull;
}

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
    fprintf(stderr, "train_mnist_mpi: %s has %lld images but %lld labels\n", prefix, (long long)d.n,
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

static double scalar_of(ch_variable* v) {
  ch_array* a;
  double value = 0;
  CHECK(ch_variable_data(&a, v));
  CHECK(ch_array_get(&value, a, 0));
  ch_array_release(a);
  return value;
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

/* Variables over caller-owned batch buffers (zero-copy). */
static void batch_vars(float* xb, int32_t* tb, int64_t n, int is_volatile, ch_variable** x,
                       ch_variable** t) {
  ch_array *xa, *ta;
  const int64_t xs[2] = {n, 784}, ts[1] = {n};
  CHECK(ch_array_wrap(&xa, CH_FLOAT32, xs, 2, xb, ch_device_cpu(), NULL, NULL));
  CHECK(ch_array_wrap(&ta, CH_INT32, ts, 1, tb, ch_device_cpu(), NULL, NULL));
  CHECK(ch_variable_new(x, xa, is_volatile));
  CHECK(ch_variable_new(t, ta, is_volatile));
  /* Data needs no gradient: the first layer then skips computing one. */
  CHECK(ch_variable_set_requires_grad(*x, 0));
  CHECK(ch_variable_set_requires_grad(*t, 0));
  ch_array_release(xa);
  ch_array_release(ta);
}

/* Loss and accuracy sums of `idx[0..n)` (training when opt is not NULL). */
static void run(const Model* m, const Dataset* d, const int64_t* idx, int64_t n, int64_t batch,
                ch_optimizer* opt, float* xb, int32_t* tb, double sums[3], int show, double t0,
                int size) {
  int64_t i;
  for (i = 0; i < n; i += batch) {
    int64_t b = n - i < batch ? n - i : batch;
    ch_variable *x, *t, *loss, *acc;
    gather(d, idx + i, b, xb, tb);
    batch_vars(xb, tb, b, opt == NULL, &x, &t);
    if (opt) CHECK(ch_optimizer_zero_grads(opt));
    forward(m, x, t, &loss, &acc);
    if (opt) {
      CHECK(ch_variable_backward(loss, 0));
      CHECK(ch_optimizer_update(opt)); /* allreduces the gradients first */
    }
    sums[0] += scalar_of(loss) * (double)b;
    sums[1] += scalar_of(acc) * (double)b;
    sums[2] += (double)b;
    ch_variable_release(loss);
    ch_variable_release(acc);
    ch_variable_release(x);
    ch_variable_release(t);
    if (show && ((i / batch) % 20 == 0 || i + b == n)) {
      double dt = now_s() - t0;
      fprintf(stderr, "\r  rank 0: %lld/%lld  ~%.0f samples/s over %d ranks ", (long long)(i + b),
              (long long)n, dt > 0 ? (double)(i + b) * size / dt : 0.0, size);
      if (i + b == n) fprintf(stderr, "\r%70s\r", "");
      fflush(stderr);
    }
  }
}

int main(int argc, char** argv) {
  Options o = parse(argc, argv);
  ch_communicator* comm = NULL;
  Dataset train, test;
  Model model;
  ch_optimizer *opt, *mn;
  float* xb;
  int32_t* tb;
  int64_t *mine, *test_mine, n_mine = 0, n_test_mine = 0;
  int rank, size, epoch;
  const int64_t three = 3;
  ch_array* sums_array;

  CHECK(ch_communicator_new_mpi(&comm));
  rank = g_rank = ch_communicator_rank(comm);
  size = ch_communicator_size(comm);
  if (o.threads > 0) CHECK(ch_config_set_num_threads(o.threads));
  /* Different initial values on every rank: the broadcast below makes them
   * rank 0's. */
  ch_config_seed(o.seed + (uint64_t)rank);
  rng_state ^= (o.seed + (uint64_t)rank) * 0x9E3779B97F4A7C15ull;
  train = load(o.data, "train", o.limit);
  test = load(o.data, "t10k", 0);

  model = make_model(o.hidden);
  if (!strcmp(o.optimizer, "sgd"))
    CHECK(ch_optimizer_sgd_new(&opt, o.lr));
  else
    CHECK(ch_optimizer_adam_new(&opt, o.lr, 0.9, 0.999, 1.0 - 1e-8, 1e-8));
  CHECK(ch_optimizer_setup(opt, model.set));
  CHECK(ch_optimizer_new_multi_node(&mn, opt, comm));
  CHECK(ch_communicator_bcast_data(comm, model.set));

  /* This rank's samples: a shuffled share of the training set, a plain
   * share of the test set. */
  CHECK(ch_communicator_scatter_indices(NULL, 0, &n_mine, comm, train.n, 1, o.seed));
  CHECK(ch_communicator_scatter_indices(NULL, 0, &n_test_mine, comm, test.n, 0, 0));
  mine = (int64_t*)malloc(sizeof(int64_t) * (size_t)(n_mine ? n_mine : 1));
  test_mine = (int64_t*)malloc(sizeof(int64_t) * (size_t)(n_test_mine ? n_test_mine : 1));
  xb = (float*)malloc(sizeof(float) * 784 * (size_t)o.batch);
  tb = (int32_t*)malloc(sizeof(int32_t) * (size_t)o.batch);
  if (!mine || !test_mine || !xb || !tb) {
    fprintf(stderr, "train_mnist_mpi: out of memory\n");
    return 1;
  }
  CHECK(ch_communicator_scatter_indices(mine, n_mine, NULL, comm, train.n, 1, o.seed));
  CHECK(ch_communicator_scatter_indices(test_mine, n_test_mine, NULL, comm, test.n, 0, 0));
  CHECK(ch_array_new_empty(&sums_array, CH_FLOAT64, &three, 1, ch_device_cpu()));
  if (rank == 0)
    printf(
        "%d ranks (%d on this machine), %lld train samples each, global batch %d x %d; MLP "
        "784-%d-%d-10; %s lr %g; %d threads per rank; NCCL %s\n",
        size, ch_communicator_intra_size(comm), (long long)n_mine, size, o.batch, o.hidden,
        o.hidden, o.optimizer, o.lr, ch_config_num_threads(),
        ch_communicator_has_nccl() ? "compiled" : "not compiled");

  for (epoch = 1; epoch <= o.epochs; ++epoch) {
    double tr[3] = {0, 0, 0}, te[3] = {0, 0, 0}, t0, dt;
    double* s = (double*)ch_array_data(sums_array);
    shuffle(mine, n_mine); /* this rank's own order */
    CHECK(ch_communicator_barrier(comm));
    t0 = now_s();
    ch_config_set_train(1);
    run(&model, &train, mine, n_mine, o.batch, mn, xb, tb, tr, rank == 0, t0, size);
    CHECK(ch_communicator_barrier(comm));
    dt = now_s() - t0;
    ch_config_set_train(0);
    run(&model, &test, test_mine, n_test_mine, o.batch, NULL, xb, tb, te, 0, 0, size);
    memcpy(s, tr, sizeof tr);
    CHECK(ch_communicator_allreduce_array(comm, sums_array, CH_REDUCE_SUM));
    memcpy(tr, s, sizeof tr);
    memcpy(s, te, sizeof te);
    CHECK(ch_communicator_allreduce_array(comm, sums_array, CH_REDUCE_SUM));
    memcpy(te, s, sizeof te);
    if (rank == 0) {
      printf("epoch %2d  train loss %.4f acc %.4f  test loss %.4f acc %.4f  %.0f samples/s\n",
             epoch, tr[0] / tr[2], tr[1] / tr[2], te[0] / te[2], te[1] / te[2], tr[2] / dt);
      fflush(stdout);
    }
  }

  free(mine);
  free(test_mine);
  free(xb);
  free(tb);
  ch_array_release(sums_array);
  ch_optimizer_release(mn);
  ch_optimizer_release(opt);
  free_model(&model);
  ch_array_release(train.x);
  ch_array_release(train.t);
  ch_array_release(test.x);
  ch_array_release(test.t);
  CHECK(ch_communicator_release(comm));
  return 0;
}
