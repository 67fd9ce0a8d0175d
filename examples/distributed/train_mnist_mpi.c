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
#define EXAMPLE_NAME "train_mnist_mpi"
#include "../common/mnist_mlp.h"

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

/* Loss and accuracy sums of `idx[0..n)` (training when opt is not NULL). */
static void run(const Model* m, const Dataset* d, const int64_t* idx, int64_t n, int64_t batch,
                ch_optimizer* opt, float* xb, int32_t* tb, double sums[3], int show, double t0,
                int size) {
  int64_t i;
  for (i = 0; i < n; i += batch) {
    int64_t b = n - i < batch ? n - i : batch;
    ch_variable *x, *t, *loss, *acc;
    gather(d, idx + i, b, xb, tb);
    batch_vars(xb, tb, b, opt == NULL, ch_device_cpu(), &x, &t);
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
        ch_communicator_has_nccl() ? "available" : "not available");

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
