/*
 * Tests of <ch/distributed.h>, run by meson through mpirun with 2 and 3 ranks
 * (tests/distributed/meson.build). Each rank asserts; the program exits 0
 * only when every check held on this rank, and mpirun's status is non-zero
 * when any rank failed.
 *
 *   test_distributed basic     rank/size, barrier, released handles,
 *                              allreduce_array (sum, mean, int32, mismatches),
 *                              scatter_indices
 *   test_distributed train     broadcast makes differently initialised ranks
 *                              equal; SGD and Adam steps through the
 *                              multi-node optimizer (and allreduce_grads):
 *                              parameters bit-identical on every rank and
 *                              within 1e-6 relative of one process trained on
 *                              the combined batches (computed here), on a
 *                              tiny model and one of 12,243 parameters whose
 *                              arrays straddle the ranks' slices of the
 *                              shared-memory reduction; CH_MPI_SHM: an
 *                              invalid value on one rank is refused on every
 *                              rank, a communicator's release stays local,
 *                              a gradient listed twice (one function under
 *                              two names) gets the exact mean (meson runs
 *                              this mode with CH_MPI_SHM unset, 1 and 0: the
 *                              segment and MPI paths)
 *   test_distributed mismatch  models that differ: CH_ERR_INVALID_ARGUMENT on
 *                              every rank naming the first difference
 *   test_distributed cuda      as train, with the models and data on cuda:0
 *                              (the emulated devices of -Dcuda-emulation=true:
 *                              the MPI path through host memory), and CH_NCCL:
 *                              1 (NCCL required, absent from such a build)
 *                              is CH_ERR_UNSUPPORTED on every rank, an
 *                              invalid value CH_ERR_INVALID_ARGUMENT
 *   test_distributed die       the last rank exits with status 3 before a
 *                              collective; the job must end non-zero (the
 *                              meson test expects failure within its timeout)
 *   test_distributed kill      the last rank is killed (SIGKILL, by a thread
 *                              of its own, 2 ms after it entered the reduction
 *                              of 4.2M float32 gradients) while the others
 *                              reduce with it: the job must end by itself
 *   test_distributed stall     the last rank sleeps instead of joining the
 *                              reduction: the others' CH_MPI_TIMEOUT ends them
 *                              (status 124), then mpirun the sleeper
 * Every mode first checks that an invalid CH_MPI_TIMEOUT is refused.
 */
#define _POSIX_C_SOURCE 200809L /* setenv, nanosleep */
#include <ch/ch.h>
#include <ch/cuda.h>
#include <ch/distributed.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int failures = 0;
static int g_rank = -1;

#define CHECK(call)                                                                             \
  do {                                                                                          \
    ch_status st_ = (call);                                                                     \
    if (st_ != CH_OK) {                                                                         \
      fprintf(stderr, "rank %d: %s:%d: %s failed: %s: %s\n", g_rank, __FILE__, __LINE__, #call, \
              ch_status_name(st_), ch_error_message());                                         \
      exit(2);                                                                                  \
    }                                                                                           \
  } while (0)

#define EXPECT(cond, ...)                                                                  \
  do {                                                                                     \
    if (!(cond)) {                                                                         \
      fprintf(stderr, "rank %d: %s:%d: expected %s: ", g_rank, __FILE__, __LINE__, #cond); \
      fprintf(stderr, __VA_ARGS__);                                                        \
      fprintf(stderr, "\n");                                                               \
      ++failures;                                                                          \
    }                                                                                      \
  } while (0)

/* --- basic ------------------------------------------------------------------ */

static ch_array* vector(ch_dtype dtype, int64_t n, double (*f)(int64_t, int), int rank) {
  ch_array* a = NULL;
  int64_t i;
  CHECK(ch_array_new_empty(&a, dtype, &n, 1, ch_device_cpu()));
  for (i = 0; i < n; ++i) {
    double v = f(i, rank);
    if (dtype == CH_FLOAT32)
      ((float*)ch_array_data(a))[i] = (float)v;
    else if (dtype == CH_FLOAT64)
      ((double*)ch_array_data(a))[i] = v;
    else
      ((int32_t*)ch_array_data(a))[i] = (int32_t)v;
  }
  return a;
}

static double value_of(int64_t i, int rank) { return (double)(rank + 1) * 0.5 + (double)i; }

static void test_basic(ch_communicator* comm) {
  const int rank = ch_communicator_rank(comm), size = ch_communicator_size(comm);
  const double n = size;
  ch_communicator* other = NULL;
  ch_array* a;
  int64_t i;
  EXPECT(size >= 2, "size %d", size);
  EXPECT(rank >= 0 && rank < size, "rank %d of %d", rank, size);
  /* One machine: the rank within it is the rank. */
  EXPECT(ch_communicator_intra_rank(comm) == rank, "intra_rank %d",
         ch_communicator_intra_rank(comm));
  EXPECT(ch_communicator_intra_size(comm) == size, "intra_size %d",
         ch_communicator_intra_size(comm));
  CHECK(ch_communicator_barrier(comm));

  /* Released and NULL handles. */
  CHECK(ch_communicator_new_mpi(&other));
  EXPECT(ch_communicator_retain(other) == other, "retain returns the handle");
  CHECK(ch_communicator_release(other));
  EXPECT(ch_communicator_size(other) == size, "still live after one of two releases");
  CHECK(ch_communicator_release(other));
  EXPECT(ch_communicator_rank(other) == -1, "rank of a released communicator");
  EXPECT(ch_communicator_barrier(other) == CH_ERR_RELEASED_HANDLE, "barrier on released: %s",
         ch_error_message());
  EXPECT(strstr(ch_error_message(), "released") != NULL, "message '%s'", ch_error_message());
  EXPECT(ch_communicator_release(other) == CH_ERR_RELEASED_HANDLE, "double release");
  EXPECT(ch_communicator_release(NULL) == CH_OK, "release(NULL)");
  EXPECT(ch_communicator_barrier(NULL) == CH_ERR_NULL_HANDLE, "barrier(NULL)");
  EXPECT(ch_communicator_retain(other) == NULL, "retain of a released communicator");

  /* Sum and mean: value_of(i, r) summed over r = n * i + 0.5 * n(n+1)/2. */
  a = vector(CH_FLOAT64, 5, value_of, rank);
  CHECK(ch_communicator_allreduce_array(comm, a, CH_REDUCE_SUM));
  for (i = 0; i < 5; ++i) {
    double want = n * (double)i + 0.25 * n * (n + 1), got = ((double*)ch_array_data(a))[i];
    EXPECT(got == want, "sum[%lld] %.17g, want %.17g", (long long)i, got, want);
  }
  ch_array_release(a);
  a = vector(CH_FLOAT32, 3, value_of, rank);
  CHECK(ch_communicator_allreduce_array(comm, a, CH_REDUCE_MEAN));
  for (i = 0; i < 3; ++i) {
    double want = (double)i + 0.25 * (n + 1), got = ((float*)ch_array_data(a))[i];
    EXPECT(fabs(got - want) <= 1e-6 * fabs(want), "mean[%lld] %.9g, want %.9g", (long long)i, got,
           want);
  }
  ch_array_release(a);
  a = vector(CH_INT32, 4, value_of, rank); /* int32(0.5 (r+1) + i) */
  CHECK(ch_communicator_allreduce_array(comm, a, CH_REDUCE_SUM));
  for (i = 0; i < 4; ++i) {
    int32_t want = 0, got = ((int32_t*)ch_array_data(a))[i];
    int r;
    for (r = 0; r < size; ++r) want += (int32_t)value_of(i, r);
    EXPECT(got == want, "int32 sum[%lld] %d, want %d", (long long)i, got, want);
  }
  ch_array_release(a);
  EXPECT(ch_communicator_allreduce_array(comm, NULL, CH_REDUCE_SUM) == CH_ERR_NULL_HANDLE,
         "NULL array");
  /* Shapes and dtypes that differ: an error on every rank, naming both. */
  a = vector(CH_FLOAT32, rank == size - 1 ? 4 : 3, value_of, rank);
  EXPECT(ch_communicator_allreduce_array(comm, a, CH_REDUCE_SUM) == CH_ERR_SHAPE,
         "shape mismatch: %s", ch_error_message());
  EXPECT(strstr(ch_error_message(),
                "float32 shape (3,) on rank 0 but float32 shape (4,) on rank") != NULL,
         "message '%s'", ch_error_message());
  ch_array_release(a);
  a = vector(rank == size - 1 ? CH_FLOAT64 : CH_FLOAT32, 3, value_of, rank);
  EXPECT(ch_communicator_allreduce_array(comm, a, CH_REDUCE_SUM) == CH_ERR_DTYPE,
         "dtype mismatch: %s", ch_error_message());
  ch_array_release(a);
  a = vector(CH_FLOAT32, 3, value_of, rank);
  EXPECT(ch_communicator_allreduce_array(comm, a, (ch_reduce_op)7) == CH_ERR_INVALID_ARGUMENT,
         "bad op");
  ch_array_release(a);
  CHECK(ch_communicator_barrier(comm)); /* still usable after the errors */

  /* scatter_indices: every rank gets ceil(n / N) indices, the shares cover
   * 0..n-1, shares overlap only where N does not divide n, and the shuffled
   * order is rank 0's. */
  {
    const int64_t sizes[3] = {10, 12, 1};
    int k;
    for (k = 0; k < 3; ++k) {
      const int64_t total = sizes[k], share = (total + size - 1) / size;
      int64_t idx[16], count = -1, seen_total = 0;
      int shuffle;
      for (shuffle = 0; shuffle < 2; ++shuffle) {
        ch_array* hist;
        int64_t j;
        /* Each rank passes its own seed: rank 0's must decide. */
        CHECK(ch_communicator_scatter_indices(idx, 16, &count, comm, total, shuffle,
                                              1234 + (uint64_t)rank));
        EXPECT(count == share, "n %lld: count %lld, want %lld", (long long)total, (long long)count,
               (long long)share);
        hist = vector(CH_INT32, total, value_of, 0);
        CHECK(ch_array_fill(hist, 0));
        for (j = 0; j < count; ++j) {
          EXPECT(idx[j] >= 0 && idx[j] < total, "index %lld", (long long)idx[j]);
          if (idx[j] >= 0 && idx[j] < total) ((int32_t*)ch_array_data(hist))[idx[j]] += 1;
        }
        CHECK(ch_communicator_allreduce_array(comm, hist, CH_REDUCE_SUM));
        seen_total = 0;
        for (j = 0; j < total; ++j) {
          int32_t h = ((int32_t*)ch_array_data(hist))[j];
          /* n >= N: a sample is in at most two neighbouring shares. */
          EXPECT(h >= 1 && h <= (total >= size ? 2 : size),
                 "n %lld shuffle %d: index %lld seen %d times", (long long)total, shuffle,
                 (long long)j, h);
          seen_total += h;
        }
        EXPECT(seen_total == share * size, "seen %lld", (long long)seen_total);
        if (!shuffle && count > 0)
          EXPECT(idx[0] == total * rank / size, "first index %lld", (long long)idx[0]);
        ch_array_release(hist);
      }
    }
    {
      int64_t count = 0;
      EXPECT(ch_communicator_scatter_indices(NULL, 0, &count, comm, -1, 0, 0) ==
                 CH_ERR_INVALID_ARGUMENT,
             "n = -1");
    }
  }
}

/* --- models ------------------------------------------------------------------ */

typedef struct Model {
  ch_function_set* set;
  ch_function* l[2];
} Model;

/* The device of the train tests: the CPU, or cuda:0 in mode cuda. */
static ch_device g_device;
/* The train tests' model: g_in -> g_hidden -> 3. */
static int64_t g_in = 5, g_hidden = 4;

/* in -> hidden -> 3, initialised from `seed` (on the CPU), on g_device. */
static Model make_model(int64_t in, int64_t hidden, ch_dtype dtype, uint64_t seed) {
  Model m;
  ch_config_seed(seed);
  CHECK(ch_function_set_new(&m.set));
  CHECK(ch_functions_linear_new(&m.l[0], in, hidden, dtype, 1.0, 0.1, 0, NULL, NULL));
  CHECK(ch_functions_linear_new(&m.l[1], hidden, 3, dtype, 1.0, 0.0, 0, NULL, NULL));
  CHECK(ch_function_set_add_function(m.set, "l1", m.l[0]));
  CHECK(ch_function_set_add_function(m.set, "l2", m.l[1]));
  if (g_device.type != CH_DEVICE_CPU) CHECK(ch_function_set_to_gpu(m.set, g_device));
  return m;
}

static void free_model(Model* m) {
  ch_function_release(m->l[0]);
  ch_function_release(m->l[1]);
  ch_function_set_release(m->set);
}

static ch_variable* apply(ch_function* f, ch_variable* x) {
  ch_variable* y = NULL;
  CHECK(ch_function_apply(f, &x, 1, &y, 1, NULL));
  return y;
}

/* Loss of rows [begin, begin + n) of the step's data (the same data on
 * every rank: rank r's share of the combined batch is its rows), backward. */
static void loss_backward(const Model* m, ch_dtype dtype, int64_t in, int step, int64_t begin,
                          int64_t n) {
  ch_array *xa, *ta;
  ch_variable *x, *t, *h, *a, *y, *loss;
  int64_t xs[2], i, j;
  xs[0] = n;
  xs[1] = in;
  CHECK(ch_array_new_empty(&xa, dtype, xs, 2, ch_device_cpu()));
  CHECK(ch_array_new_empty(&ta, CH_INT32, xs, 1, ch_device_cpu()));
  for (i = 0; i < n; ++i) {
    int64_t row = begin + i;
    for (j = 0; j < in; ++j) {
      double v = sin(0.37 * (double)(row * in + j) + 1.3 * step);
      if (dtype == CH_FLOAT32)
        ((float*)ch_array_data(xa))[i * in + j] = (float)v;
      else
        ((double*)ch_array_data(xa))[i * in + j] = v;
    }
    ((int32_t*)ch_array_data(ta))[i] = (int32_t)((row * 7 + step) % 3);
  }
  if (g_device.type != CH_DEVICE_CPU) {
    ch_array* moved;
    CHECK(ch_array_to_device(&moved, xa, g_device));
    ch_array_release(xa);
    xa = moved;
    CHECK(ch_array_to_device(&moved, ta, g_device));
    ch_array_release(ta);
    ta = moved;
  }
  CHECK(ch_variable_new(&x, xa, 0));
  CHECK(ch_variable_new(&t, ta, 0));
  CHECK(ch_variable_set_requires_grad(x, 0));
  a = apply(m->l[0], x);
  CHECK(ch_functions_tanh(&h, a));
  y = apply(m->l[1], h);
  CHECK(ch_functions_softmax_cross_entropy(&loss, y, t));
  CHECK(ch_variable_backward(loss, 0));
  ch_variable_release(loss);
  ch_variable_release(y);
  ch_variable_release(h);
  ch_variable_release(a);
  ch_variable_release(x);
  ch_variable_release(t);
  ch_array_release(xa);
  ch_array_release(ta);
}

static double element(ch_array* a, int64_t i) {
  double v = 0;
  CHECK(ch_array_get(&v, a, i));
  return v;
}

/* Every parameter of `m` equal, bit for bit, to rank 0's (broadcast a copy). */
static int bit_identical_to_rank0(ch_communicator* comm, const Model* m, int64_t in, ch_dtype dtype,
                                  const char* what) {
  Model c = make_model(in, g_hidden, dtype, 999);
  size_t k, n = ch_function_set_parameter_count(m->set);
  int same = 1;
  CHECK(ch_function_set_copy_parameters_from(c.set, m->set));
  CHECK(ch_communicator_bcast_data(comm, c.set));
  for (k = 0; k < n; ++k) {
    ch_array *p, *q;
    size_t nb;
    char *bp, *bq;
    CHECK(ch_function_set_parameter(&p, NULL, NULL, m->set, k));
    CHECK(ch_function_set_parameter(&q, NULL, NULL, c.set, k));
    /* Through host copies: the arrays may be on a CUDA device. */
    nb = ch_array_nbytes(p);
    bp = (char*)malloc(nb ? nb : 1);
    bq = (char*)malloc(nb ? nb : 1);
    if (!bp || !bq) exit(2);
    CHECK(ch_array_read(p, bp, nb));
    CHECK(ch_array_read(q, bq, nb));
    if (memcmp(bp, bq, nb) != 0) same = 0;
    free(bp);
    free(bq);
    ch_array_release(p);
    ch_array_release(q);
  }
  free_model(&c);
  EXPECT(same, "%s: parameters bit-identical to rank 0's", what);
  return same;
}

static void test_train(ch_communicator* comm, ch_dtype dtype, const char* opt_name,
                       int use_multi_node) {
  const int rank = ch_communicator_rank(comm), size = ch_communicator_size(comm);
  const int64_t in = g_in, per_rank = 3, steps = 6;
  /* Differently initialised ranks; broadcast makes them rank 0's. */
  Model m = make_model(in, g_hidden, dtype, 100 + (uint64_t)rank), ref;
  ch_optimizer *opt, *ref_opt, *mn = NULL;
  double max_rel = 0;
  size_t k, n;
  int step;
  char what[96];
  snprintf(what, sizeof what, "%s %s %s%s", opt_name, dtype == CH_FLOAT32 ? "float32" : "float64",
           use_multi_node ? "multi-node optimizer" : "allreduce_grads",
           g_device.type == CH_DEVICE_CPU ? "" : " on cuda:0");
  CHECK(ch_communicator_bcast_data(comm, m.set));
  bit_identical_to_rank0(comm, &m, in, dtype, "after bcast_data");
  ref = make_model(in, g_hidden, dtype, 7);
  CHECK(ch_function_set_copy_parameters_from(ref.set, m.set));

  if (!strcmp(opt_name, "SGD")) {
    CHECK(ch_optimizer_sgd_new(&opt, 0.1));
    CHECK(ch_optimizer_sgd_new(&ref_opt, 0.1));
  } else {
    CHECK(ch_optimizer_adam_new(&opt, 0.01, 0.9, 0.999, 1.0 - 1e-8, 1e-8));
    CHECK(ch_optimizer_adam_new(&ref_opt, 0.01, 0.9, 0.999, 1.0 - 1e-8, 1e-8));
  }
  CHECK(ch_optimizer_setup(opt, m.set));
  CHECK(ch_optimizer_setup(ref_opt, ref.set));
  if (use_multi_node) {
    CHECK(ch_optimizer_new_multi_node(&mn, opt, comm));
    EXPECT(mn == opt, "the multi-node optimizer is the optimizer");
  }
  for (step = 0; step < steps; ++step) {
    /* This rank: rows [rank * per_rank, +per_rank) of the combined batch. */
    CHECK(ch_optimizer_zero_grads(opt));
    loss_backward(&m, dtype, in, step, rank * per_rank, per_rank);
    if (use_multi_node) {
      CHECK(ch_optimizer_update(mn));
    } else {
      CHECK(ch_communicator_allreduce_grads(comm, m.set));
      CHECK(ch_optimizer_update(opt));
    }
    /* The reference: one process, the whole combined batch (the mean over
     * size * per_rank rows is the mean of the ranks' means). */
    CHECK(ch_optimizer_zero_grads(ref_opt));
    loss_backward(&ref, dtype, in, step, 0, per_rank * size);
    CHECK(ch_optimizer_update(ref_opt));
  }
  bit_identical_to_rank0(comm, &m, in, dtype, what);
  n = ch_function_set_parameter_count(m.set);
  for (k = 0; k < n; ++k) { /* the training really ran on g_device */
    ch_array *p, *g;
    CHECK(ch_function_set_parameter(&p, &g, NULL, m.set, k));
    EXPECT(
        ch_array_device(p).type == g_device.type && g && ch_array_device(g).type == g_device.type,
        "%s: parameter %d and its gradient on the device", what, (int)k);
    ch_array_release(p);
    ch_array_release(g);
  }
  for (k = 0; k < n; ++k) {
    ch_array *p, *q;
    int64_t i;
    CHECK(ch_function_set_parameter(&p, NULL, NULL, m.set, k));
    CHECK(ch_function_set_parameter(&q, NULL, NULL, ref.set, k));
    for (i = 0; i < ch_array_size(p); ++i) {
      double a = element(p, i), b = element(q, i);
      double rel = fabs(a - b) / (fabs(b) > 1e-3 ? fabs(b) : 1e-3);
      if (rel > max_rel) max_rel = rel;
    }
    ch_array_release(p);
    ch_array_release(q);
  }
  /* float64: 1e-6 relative (the differences are ~1e-15). float32: the one
   * process sums the batch in another order and divides by N in float32, a
   * few ulp per step that Adam's m / sqrt(v) can magnify: 1e-5 (~80 ulp). */
  EXPECT(max_rel <= (dtype == CH_FLOAT64 ? 1e-6 : 1e-5),
         "%s: within tolerance of one process: %.3g", what, max_rel);
  if (rank == 0)
    printf(
        "%s (%lld inputs, %lld hidden): %d ranks, %lld steps, max relative difference to one "
        "process %.3g\n",
        what, (long long)in, (long long)g_hidden, size, (long long)steps, max_rel);
  /* The update really moved the parameters. */
  {
    Model init = make_model(in, g_hidden, dtype, 100);
    ch_array *p, *q;
    CHECK(ch_communicator_bcast_data(comm, init.set)); /* not rank 0's seed: make it so */
    CHECK(ch_function_set_parameter(&p, NULL, NULL, m.set, 0));
    CHECK(ch_function_set_parameter(&q, NULL, NULL, init.set, 0));
    EXPECT(element(p, 0) != element(q, 0), "%s: a parameter changed", what);
    ch_array_release(p);
    ch_array_release(q);
    free_model(&init);
  }
  ch_optimizer_release(mn);
  ch_optimizer_release(opt);
  ch_optimizer_release(ref_opt);
  free_model(&m);
  free_model(&ref);
}

/* CH_NCCL on CUDA gradients in a build without NCCL support (the emulated
 * devices): "1" fails on every rank, naming the first rank without NCCL; an
 * invalid value is refused; unset (auto) takes the MPI path. */
static void test_nccl_choice(ch_communicator* comm) {
  const int rank = ch_communicator_rank(comm);
  Model m = make_model(5, 4, CH_FLOAT32, 1);
  ch_status st;
  EXPECT(ch_communicator_has_nccl() == 0, "no NCCL in this build");
  loss_backward(&m, CH_FLOAT32, 5, 0, 0, 3); /* gradients on cuda:0 */
  setenv("CH_NCCL", "1", 1);
  st = ch_communicator_allreduce_grads(comm, m.set);
  EXPECT(st == CH_ERR_UNSUPPORTED, "CH_NCCL=1: %s", ch_status_name(st));
  EXPECT(strstr(ch_error_message(),
                "CH_NCCL=1 asks for NCCL for CUDA gradients but rank 0 cannot "
                "use it") != NULL,
         "message '%s'", ch_error_message());
  EXPECT(rank != 0 || strstr(ch_error_message(), "built without NCCL") != NULL, "message '%s'",
         ch_error_message());
  /* Only the last rank has a bad value: every rank refuses. */
  setenv("CH_NCCL", rank == ch_communicator_size(comm) - 1 ? "yes" : "auto", 1);
  st = ch_communicator_allreduce_grads(comm, m.set);
  EXPECT(st == CH_ERR_INVALID_ARGUMENT, "CH_NCCL=yes: %s", ch_status_name(st));
  EXPECT(strstr(ch_error_message(),
                "expected 0 (MPI through host memory), 1 (NCCL required) or "
                "auto") != NULL,
         "message '%s'", ch_error_message());
  unsetenv("CH_NCCL");
  CHECK(ch_communicator_allreduce_grads(comm, m.set)); /* auto: through host memory */
  free_model(&m);
}

/* CH_MPI_SHM, on a communicator of its own (each decides once, at its first
 * reduction of host gradients): a value other than auto, 0 or 1 on one rank
 * is CH_ERR_INVALID_ARGUMENT on every rank, nothing reduced; then the job's
 * own setting decides. Releasing that communicator is local even after a
 * reduction through the shared-memory segment: rank 0 releases it before a
 * barrier on `comm` that the others reach before releasing theirs (a
 * collective release would deadlock here, and the test time out). */
static void test_shm_choice(ch_communicator* comm) {
  ch_communicator* c2;
  const char* job = getenv("CH_MPI_SHM");
  char* saved = job ? strdup(job) : NULL;
  Model m = make_model(5, 4, CH_FLOAT64, 1);
  ch_status st;
  int size;
  CHECK(ch_communicator_new_mpi(&c2));
  size = ch_communicator_size(c2);
  loss_backward(&m, CH_FLOAT64, 5, 0, 0, 3);
  setenv("CH_MPI_SHM", g_rank == size - 1 ? "yes" : "auto", 1);
  st = ch_communicator_allreduce_grads(c2, m.set);
  EXPECT(st == CH_ERR_INVALID_ARGUMENT, "CH_MPI_SHM=yes: %s", ch_status_name(st));
  EXPECT(strstr(ch_error_message(),
                "expected 0 (MPI_Allreduce), 1 (the shared-memory segment "
                "required) or auto") != NULL,
         "message '%s'", ch_error_message());
  EXPECT(g_rank != size - 1 || strstr(ch_error_message(), "CH_MPI_SHM is 'yes' on rank") != NULL,
         "message '%s'", ch_error_message());
  if (saved)
    setenv("CH_MPI_SHM", saved, 1);
  else
    unsetenv("CH_MPI_SHM");
  free(saved);
  CHECK(ch_communicator_allreduce_grads(c2, m.set));
  if (g_rank == 0) {
    CHECK(ch_communicator_release(c2));
    CHECK(ch_communicator_barrier(comm));
  } else {
    CHECK(ch_communicator_barrier(comm));
    CHECK(ch_communicator_release(c2));
  }
  free_model(&m);
}

/* One function under two names: its parameters (and gradients) are listed
 * twice. Gradient element i on rank r is r + 1 + i (exact in float32), so
 * the mean over N ranks is (N + 1) / 2 + i exactly, whichever path runs
 * (the segment reduces such a gradient once; MPI_Allreduce packs it twice). */
static void test_shared_parameter(ch_communicator* comm) {
  const int size = ch_communicator_size(comm);
  ch_function_set* set;
  ch_function* l;
  ch_optimizer* opt;
  size_t k, n;
  int64_t i;
  CHECK(ch_function_set_new(&set));
  CHECK(ch_functions_linear_new(&l, 40, 30, CH_FLOAT32, 1.0, 0.0, 0, NULL, NULL));
  CHECK(ch_function_set_add_function(set, "a", l));
  CHECK(ch_function_set_add_function(set, "b", l));
  CHECK(ch_optimizer_sgd_new(&opt, 0.1));
  CHECK(ch_optimizer_setup(opt, set));
  CHECK(ch_optimizer_zero_grads(opt)); /* allocates the gradients */
  n = ch_function_set_parameter_count(set);
  EXPECT(n == 4, "W and b listed twice: %d parameters", (int)n);
  for (k = 0; k < n; ++k) {
    ch_array* g;
    CHECK(ch_function_set_parameter(NULL, &g, NULL, set, k));
    for (i = 0; i < ch_array_size(g); ++i) ((float*)ch_array_data(g))[i] = (float)(g_rank + 1 + i);
    ch_array_release(g);
  }
  CHECK(ch_communicator_allreduce_grads(comm, set));
  for (k = 0; k < n; ++k) {
    ch_array* g;
    int bad = 0;
    CHECK(ch_function_set_parameter(NULL, &g, NULL, set, k));
    for (i = 0; i < ch_array_size(g); ++i)
      if (((float*)ch_array_data(g))[i] != (float)(size + 1) / 2.0f + (float)i) ++bad;
    EXPECT(bad == 0, "shared parameter %d: %d elements are not the mean", (int)k, bad);
    ch_array_release(g);
  }
  ch_optimizer_release(opt);
  ch_function_release(l);
  ch_function_set_release(set);
}

static void expect_mismatch(ch_status st, const char* what, const char* needle) {
  EXPECT(st == CH_ERR_INVALID_ARGUMENT, "%s: %s", what, ch_status_name(st));
  EXPECT(strstr(ch_error_message(), needle) != NULL, "%s: message '%s' lacks '%s'", what,
         ch_error_message(), needle);
}

static void test_mismatch(ch_communicator* comm) {
  const int rank = ch_communicator_rank(comm), size = ch_communicator_size(comm);
  const int last = rank == size - 1;
  char needle[160];
  /* The last rank's hidden layer is wider: l1/W differs first. */
  Model m = make_model(5, last ? 6 : 4, CH_FLOAT32, 1);
  ch_optimizer *opt, *mn;
  snprintf(needle, sizeof needle,
           "parameter 0 is 'l1/W' (float32, shape (4, 5), cpu) on rank 0 but 'l1/W' (float32, "
           "shape (6, 5), cpu) on rank %d",
           size - 1);
  expect_mismatch(ch_communicator_allreduce_grads(comm, m.set), "allreduce_grads", needle);
  expect_mismatch(ch_communicator_bcast_data(comm, m.set), "bcast_data", needle);
  CHECK(ch_optimizer_sgd_new(&opt, 0.1));
  CHECK(ch_optimizer_setup(opt, m.set));
  CHECK(ch_optimizer_new_multi_node(&mn, opt, comm));
  {
    ch_array* p;
    double before, after;
    CHECK(ch_function_set_parameter(&p, NULL, NULL, m.set, 0));
    before = element(p, 0);
    expect_mismatch(ch_optimizer_update(mn), "multi-node update", needle);
    after = element(p, 0);
    EXPECT(before == after, "a failed update changed nothing");
    EXPECT(ch_optimizer_t(opt) == 0, "t stays 0 after the failed update");
    ch_array_release(p);
  }
  ch_optimizer_release(mn);
  ch_optimizer_release(opt);
  free_model(&m);
  /* A missing member: the last rank has no l2. */
  {
    ch_function_set* s;
    ch_function* l1;
    ch_function* l2;
    ch_config_seed(3);
    CHECK(ch_function_set_new(&s));
    CHECK(ch_functions_linear_new(&l1, 2, 2, CH_FLOAT32, 1.0, 0.0, 0, NULL, NULL));
    CHECK(ch_functions_linear_new(&l2, 2, 2, CH_FLOAT32, 1.0, 0.0, 0, NULL, NULL));
    CHECK(ch_function_set_add_function(s, "l1", l1));
    if (!last) CHECK(ch_function_set_add_function(s, "l2", l2));
    snprintf(needle, sizeof needle,
             "rank 0 has 4 parameters, rank %d has 2; the first one missing on rank %d is 'l2/W'",
             size - 1, size - 1);
    expect_mismatch(ch_communicator_allreduce_grads(comm, s), "missing member", needle);
    ch_function_release(l1);
    ch_function_release(l2);
    ch_function_set_release(s);
  }
  CHECK(ch_communicator_barrier(comm)); /* the communicator still works */
}

/* --- kill, stall ------------------------------------------------------------ */

static void* kill_soon(void* arg) {
  struct timespec ts = {0, 2000000}; /* 2 ms: inside the reduction of the gradients */
  (void)arg;
  nanosleep(&ts, NULL);
  fprintf(stderr, "rank %d: killing itself (SIGKILL) inside allreduce_grads\n", g_rank);
  fflush(stderr);
  raise(SIGKILL);
  return NULL;
}

/* The last rank dies (kill) or sleeps (stall) where the others reduce 4.2M
 * float32 gradients with it; the others must not wait past a bound. */
static void test_failing_peer(ch_communicator* comm, int kill) {
  const int last = g_rank == ch_communicator_size(comm) - 1;
  Model m = make_model(2048, 2048, CH_FLOAT32, 1);
  loss_backward(&m, CH_FLOAT32, 2048, 0, 3 * g_rank, 3);
  CHECK(ch_communicator_barrier(comm));
  if (last && kill) {
    pthread_t t;
    if (pthread_create(&t, NULL, kill_soon, NULL) != 0) exit(2);
  } else if (last) {
    fprintf(stderr, "rank %d: stalling on purpose\n", g_rank);
    fflush(stderr);
    sleep(600);
    exit(2);
  }
  CHECK(ch_communicator_allreduce_grads(comm, m.set));
  CHECK(ch_communicator_barrier(comm));
  if (last) sleep(600); /* the kill came after the reduction: the barrier above waits */
  free_model(&m);
}

int main(int argc, char** argv) {
  ch_communicator* comm = NULL;
  const char* mode = argc > 1 ? argv[1] : "basic";
  g_device = ch_device_cpu();
  {
    /* An invalid CH_MPI_TIMEOUT is refused here, before MPI is initialised. */
    const char* old = getenv("CH_MPI_TIMEOUT");
    char* keep = old ? strdup(old) : NULL;
    const char* const bad[] = {"soon", "-1", "nan", "inf", "5s"};
    size_t i;
    for (i = 0; i < sizeof bad / sizeof bad[0]; ++i) {
      ch_status st;
      setenv("CH_MPI_TIMEOUT", bad[i], 1);
      st = ch_communicator_new_mpi(&comm);
      EXPECT(st == CH_ERR_INVALID_ARGUMENT && comm == NULL, "CH_MPI_TIMEOUT=%s: %s", bad[i],
             ch_status_name(st));
      EXPECT(strstr(ch_error_message(), "CH_MPI_TIMEOUT") != NULL, "message '%s'",
             ch_error_message());
    }
    if (keep)
      setenv("CH_MPI_TIMEOUT", keep, 1);
    else
      unsetenv("CH_MPI_TIMEOUT");
    free(keep);
  }
  CHECK(ch_communicator_new_mpi(&comm));
  g_rank = ch_communicator_rank(comm);
  if (!strcmp(mode, "basic")) {
    test_basic(comm);
  } else if (!strcmp(mode, "train")) {
    test_shm_choice(comm);
    test_shared_parameter(comm);
    test_train(comm, CH_FLOAT64, "SGD", 1);
    test_train(comm, CH_FLOAT64, "Adam", 1);
    test_train(comm, CH_FLOAT64, "Adam", 0);
    test_train(comm, CH_FLOAT32, "SGD", 1);
    test_train(comm, CH_FLOAT32, "Adam", 1);
    /* Larger: every rank's slice of the shared-memory reduction holds parts
     * of several arrays (and the segment grows). */
    g_in = 200;
    g_hidden = 60;
    test_train(comm, CH_FLOAT32, "SGD", 1);
    test_train(comm, CH_FLOAT64, "Adam", 0);
    g_in = 5;
    g_hidden = 4;
  } else if (!strcmp(mode, "cuda")) {
    g_device = ch_device_cuda(0);
    if (ch_cuda_device_count() < 1) {
      fprintf(stderr, "rank %d: no CUDA device: %s\n", g_rank, ch_cuda_unavailable_reason());
      return 2;
    }
    test_nccl_choice(comm);
    test_train(comm, CH_FLOAT32, "SGD", 1);
    test_train(comm, CH_FLOAT64, "Adam", 1);
    test_train(comm, CH_FLOAT32, "Adam", 0);
  } else if (!strcmp(mode, "mismatch")) {
    test_mismatch(comm);
  } else if (!strcmp(mode, "die") || !strcmp(mode, "crash")) {
    Model m = make_model(5, 4, CH_FLOAT32, 1);
    /* The last rank dies; the others wait in a collective that cannot
     * complete. Open MPI must end the job with a non-zero status. */
    if (g_rank == ch_communicator_size(comm) - 1) {
      if (!strcmp(mode, "crash")) {
        fprintf(stderr, "rank %d: aborting on purpose\n", g_rank);
        abort();
      }
      fprintf(stderr, "rank %d: exiting with status 3 on purpose\n", g_rank);
      exit(3);
    }
    CHECK(ch_communicator_allreduce_grads(comm, m.set));
    CHECK(ch_communicator_barrier(comm));
    free_model(&m);
  } else if (!strcmp(mode, "kill") || !strcmp(mode, "stall")) {
    test_failing_peer(comm, !strcmp(mode, "kill"));
  } else {
    fprintf(stderr, "unknown mode '%s'\n", mode);
    return 2;
  }
  CHECK(ch_communicator_release(comm));
  if (!strcmp(mode, "basic")) {
    /* Finalizing MPI (for hosts whose exit skips exit handlers): a later
     * communicator is an error, a second finalize a no-op. */
    CHECK(ch_communicator_finalize());
    EXPECT(ch_communicator_new_mpi(&comm) == CH_ERR_INVALID_ARGUMENT, "new after finalize: %s",
           ch_status_name(ch_error_status()));
    EXPECT(strstr(ch_error_message(), "finalized") != NULL, "message '%s'", ch_error_message());
    CHECK(ch_communicator_finalize());
  }
  if (failures) fprintf(stderr, "rank %d: %d checks failed\n", g_rank, failures);
  return failures ? 1 : 0;
}
