/*
 * The seed's MNIST example (Chainer 1.0 tutorial, section 1.1.5) in C: a
 * multi-layer perceptron 784-H-H-10 with ReLU and softmax cross entropy,
 * trained by SGD on mini-batches shuffled every epoch. Data: Fashion-MNIST
 * (IDX files, Debian's dataset-fashion-mnist) or MNIST in the same format.
 *
 *   train_mnist [--epochs 20] [--hidden 100] [--batch 100] [--optimizer sgd]
 *               [--lr 0.01] [--threads N] [--seed 1] [--save model.npz]
 *               [--data /usr/share/datasets/fashion-mnist] [--limit N]
 *               [--log log.json] [--graph graph.dot] [--device cpu|cuda:N]
 *
 * After each epoch it prints train loss/accuracy, test loss/accuracy and
 * samples per second; a progress bar with the estimated time left runs on
 * stderr during the epoch. --log writes the per-epoch numbers in the format
 * of Chainer's LogReport (a JSON list; scripts/plot_log.py draws it), --graph
 * the first mini-batch's computational graph as Graphviz DOT
 * (dot -Tpng graph.dot -o graph.png). --device cuda:0 trains on a GPU: the
 * model moves there once (ch_function_set_to_gpu, the seed's to_gpu) and each
 * mini-batch is copied there before its forward pass.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime, isatty */
#include <ch/ch.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../common/log_report.h"

#define CHECK(call)                                                                   \
  do {                                                                                \
    ch_status status_ = (call);                                                       \
    if (status_ != CH_OK) {                                                           \
      fprintf(stderr, "train_mnist: %s failed: %s (%s)\n", #call, ch_error_message(), \
              ch_status_name(status_));                                               \
      exit(1);                                                                        \
    }                                                                                 \
  } while (0)
#define EXAMPLE_NAME "train_mnist"
#include "../common/mnist_mlp.h"

typedef struct Options {
  int epochs, hidden, batch, threads;
  double lr;
  uint64_t seed;
  const char* optimizer;
  const char* save;
  const char* data;
  int64_t limit;     /* use only the first N training samples (0: all) */
  const char* log;   /* LogReport JSON file (NULL: none) */
  const char* graph; /* Graphviz DOT file of the first batch's graph (NULL: none) */
  ch_device device;  /* where the model and the batches live */
} Options;

static void usage(FILE* f) {
  fprintf(f,
          "usage: train_mnist [--epochs N] [--hidden N] [--batch N]\n"
          "                   [--optimizer sgd|sgd-in-backward|momentum|adagrad|adadelta|adam|\n"
          "                                rmsprop]\n"
          "                   [--lr X] [--threads N] [--seed N] [--save FILE.npz]\n"
          "                   [--data DIR] [--limit N] [--log FILE.json] [--graph FILE.dot]\n"
          "                   [--device cpu|cuda:N]\n");
}

static Options parse(int argc, char** argv) {
  Options o = {20,
               100,
               100,
               0,
               0.01,
               1,
               "sgd",
               NULL,
               "/usr/share/datasets/fashion-mnist",
               0,
               NULL,
               NULL,
               {CH_DEVICE_CPU, 0}};
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
    else if (!strcmp(a, "--save"))
      o.save = v;
    else if (!strcmp(a, "--data"))
      o.data = v;
    else if (!strcmp(a, "--limit"))
      o.limit = atoll(v);
    else if (!strcmp(a, "--log"))
      o.log = v;
    else if (!strcmp(a, "--graph"))
      o.graph = v;
    else if (!strcmp(a, "--device")) {
      if (!strcmp(v, "cpu"))
        o.device = ch_device_cpu();
      else if (!strncmp(v, "cuda:", 5) && v[5] >= '0' && v[5] <= '9')
        o.device = ch_device_cuda(atoi(v + 5));
      else {
        fprintf(stderr, "train_mnist: --device must be cpu or cuda:N, not '%s'\n", v);
        exit(2);
      }
    } else {
      fprintf(stderr, "train_mnist: unknown option %s\n", a);
      usage(stderr);
      exit(2);
    }
    ++i;
  }
  if (o.epochs < 0 || o.hidden < 1 || o.batch < 1) {
    fprintf(stderr, "train_mnist: --epochs must be >= 0, --hidden and --batch >= 1\n");
    exit(2);
  }
  return o;
}

/* The bar, the speed, and the time left in this epoch and in the whole run
 * (`epochs_after` more epochs of `total` samples follow this one), from this
 * epoch's speed so far. */
static void progress(int64_t done, int64_t total, double t0, int epochs_after) {
  const int width = 30;
  int fill = (int)(width * done / (total ? total : 1)), i;
  char bar[64], eta[32], run[32];
  double dt = now_s() - t0, rate = dt > 0 ? (double)done / dt : 0.0;
  double left = rate > 0 ? (double)(total - done) / rate : 0.0;
  double run_left = rate > 0 ? left + (double)epochs_after * (double)total / rate : 0.0;
  for (i = 0; i < width; ++i) bar[i] = i < fill ? '=' : (i == fill ? '>' : ' ');
  bar[width] = '\0';
  fprintf(stderr, "\r  [%s] %lld/%lld  %.0f samples/s  eta %s (run %s) ", bar, (long long)done,
          (long long)total, rate, log_report_hms(left, eta, sizeof eta),
          log_report_hms(run_left, run, sizeof run));
  if (done == total) fprintf(stderr, "\r%*s\r", width + 70, "");
  fflush(stderr);
}

/* The computational graph behind the loss as Graphviz DOT (--graph). */
static void write_graph(const char* path, ch_variable* loss) {
  const char* names[1] = {"loss"};
  ch_graph_dot_options opt = {CH_GRAPH_DOT_OPTIONS_VERSION, 0, "TB", names};
  char* dot = NULL;
  FILE* f;
  CHECK(ch_variable_graph_dot(&dot, &loss, 1, &opt));
  f = fopen(path, "w");
  if (!f || fputs(dot, f) < 0 || fclose(f) != 0) {
    fprintf(stderr, "train_mnist: cannot write %s\n", path);
    exit(1);
  }
  ch_string_free(dot);
  printf("wrote the graph of one mini-batch to %s (render it: dot -Tpng %s -o graph.png)\n", path,
         path);
}

static ch_optimizer* make_optimizer(const Options* o) {
  ch_optimizer* opt = NULL;
  const char* name = o->optimizer;
  if (!strcmp(name, "sgd"))
    CHECK(ch_optimizer_sgd_new(&opt, o->lr));
  else if (!strcmp(name, "sgd-in-backward")) { /* SGD, the weights' step taken in backward */
    CHECK(ch_optimizer_sgd_new(&opt, o->lr));
    CHECK(ch_optimizer_set_step_in_backward(opt, 1));
  } else if (!strcmp(name, "momentum"))
    CHECK(ch_optimizer_momentum_sgd_new(&opt, o->lr, 0.9));
  else if (!strcmp(name, "adagrad"))
    CHECK(ch_optimizer_adagrad_new(&opt, o->lr, 1e-8));
  else if (!strcmp(name, "adadelta"))
    CHECK(ch_optimizer_adadelta_new(&opt, 0.95, 1e-6));
  else if (!strcmp(name, "adam"))
    CHECK(ch_optimizer_adam_new(&opt, o->lr, 0.9, 0.999, 1.0 - 1e-8, 1e-8));
  else if (!strcmp(name, "rmsprop"))
    CHECK(ch_optimizer_rmsprop_new(&opt, o->lr, 0.99, 1e-8));
  else {
    fprintf(stderr, "train_mnist: unknown optimizer '%s'\n", name);
    exit(2);
  }
  return opt;
}

int main(int argc, char** argv) {
  Options o = parse(argc, argv);
  Dataset train, test;
  Model model;
  ch_optimizer* opt;
  float* xb;
  int32_t* tb;
  int64_t *perm, *order, i;
  int epoch;
  const int show_bar = isatty(2);
  LogReport log = {NULL, NULL, 0, 0};
  long long iteration = 0;
  double start;
  static const char* log_keys[4] = {"main/loss", "main/accuracy", "validation/main/loss",
                                    "validation/main/accuracy"};
  log.path = o.log;

  if (o.threads > 0) CHECK(ch_config_set_num_threads(o.threads));
  ch_config_seed(o.seed);
  rng_state ^= o.seed * 0x9E3779B97F4A7C15ull;
  train = load(o.data, "train", o.limit);
  test = load(o.data, "t10k", 0);
  printf("train %lld, test %lld samples; MLP 784-%d-%d-10; %s lr %g; batch %d; %d threads; %s\n",
         (long long)train.n, (long long)test.n, o.hidden, o.hidden, o.optimizer, o.lr, o.batch,
         ch_config_num_threads(), ch_config_blas());

  model = make_model(o.hidden);
  if (o.device.type != CH_DEVICE_CPU) {
    CHECK(ch_function_set_to_gpu(model.set, o.device));
    printf("model and mini-batches on cuda:%d\n", (int)o.device.index);
  }
  opt = make_optimizer(&o);
  CHECK(ch_optimizer_setup(opt, model.set));

  xb = (float*)malloc(sizeof(float) * 784 * (size_t)o.batch);
  tb = (int32_t*)malloc(sizeof(int32_t) * (size_t)o.batch);
  perm = (int64_t*)malloc(sizeof(int64_t) * (size_t)train.n);
  order = (int64_t*)malloc(sizeof(int64_t) * (size_t)test.n);
  if (!xb || !tb || !perm || !order) {
    fprintf(stderr, "train_mnist: out of memory\n");
    return 1;
  }
  for (i = 0; i < train.n; ++i) perm[i] = i;
  for (i = 0; i < test.n; ++i) order[i] = i;

  start = now_s();
  for (epoch = 1; epoch <= o.epochs; ++epoch) {
    double sum_loss = 0, sum_acc = 0, t0 = now_s(), dt;
    int64_t seen = 0;
    shuffle(perm, train.n);
    ch_config_set_train(1);
    for (i = 0; i < train.n; i += o.batch) {
      int64_t n = train.n - i < o.batch ? train.n - i : o.batch;
      ch_variable *x, *t, *loss, *acc;
      gather(&train, perm + i, n, xb, tb);
      batch_vars(xb, tb, n, 0, o.device, &x, &t);
      CHECK(ch_optimizer_zero_grads(opt));
      forward(&model, x, t, &loss, &acc);
      if (o.graph && epoch == 1 && i == 0) write_graph(o.graph, loss);
      CHECK(ch_variable_backward(loss, 0));
      ++iteration;
      CHECK(ch_optimizer_update(opt));
      sum_loss += scalar_of(loss) * (double)n;
      sum_acc += scalar_of(acc) * (double)n;
      seen += n;
      ch_variable_release(loss);
      ch_variable_release(acc);
      ch_variable_release(x);
      ch_variable_release(t);
      if (show_bar && ((i / o.batch) % 10 == 0 || seen == train.n))
        progress(seen, train.n, t0, o.epochs - epoch);
    }
    dt = now_s() - t0;

    {
      double test_loss = 0, test_acc = 0;
      ch_config_set_train(0);
      for (i = 0; i < test.n; i += o.batch) {
        int64_t n = test.n - i < o.batch ? test.n - i : o.batch;
        ch_variable *x, *t, *loss, *acc;
        gather(&test, order + i, n, xb, tb);
        batch_vars(xb, tb, n, 1, o.device, &x, &t); /* volatile: no graph is recorded */
        forward(&model, x, t, &loss, &acc);
        test_loss += scalar_of(loss) * (double)n;
        test_acc += scalar_of(acc) * (double)n;
        ch_variable_release(loss);
        ch_variable_release(acc);
        ch_variable_release(x);
        ch_variable_release(t);
      }
      printf("epoch %2d  train loss %.4f acc %.4f  test loss %.4f acc %.4f  %.0f samples/s\n",
             epoch, sum_loss / (double)seen, sum_acc / (double)seen, test_loss / (double)test.n,
             test_acc / (double)test.n, (double)seen / dt);
      fflush(stdout);
      {
        const double values[4] = {sum_loss / (double)seen, sum_acc / (double)seen,
                                  test_loss / (double)test.n, test_acc / (double)test.n};
        log_report_add(&log, epoch, iteration, log_keys, values, 4, now_s() - start);
      }
    }
  }

  if (o.save) {
    CHECK(ch_function_set_save_npz(model.set, o.save, 0));
    printf("saved the model to %s (numpy.load reads it; keys l1/W, l1/b, ...)\n", o.save);
  }

  if (o.log)
    printf("wrote the training log to %s (plot it: scripts/plot_log.py %s)\n", o.log, o.log);
  log_report_free(&log);
  free(xb);
  free(tb);
  free(perm);
  free(order);
  ch_optimizer_release(opt);
  free_model(&model);
  ch_array_release(train.x);
  ch_array_release(train.t);
  ch_array_release(test.x);
  ch_array_release(test.t);
  return 0;
}
