// The seed's MNIST example (Chainer 1.0 tutorial, section 1.1.5) with the C++ API
// <ch/ch.hpp>: the twin of train_mnist.c (same flags, same output). A multi-layer perceptron
// 784-H-H-10 with ReLU and softmax cross entropy, trained on mini-batches shuffled every
// epoch. Data: Fashion-MNIST (IDX files, Debian's dataset-fashion-mnist) or MNIST.
//
//   train_mnist_cpp [--epochs 20] [--hidden 100] [--batch 100] [--optimizer sgd]
//                   [--lr 0.01] [--threads N] [--seed 1] [--save model.npz]
//                   [--data /usr/share/datasets/fashion-mnist] [--limit N]
//                   [--log log.json] [--graph graph.dot]
//
// After each epoch it prints train loss/accuracy, test loss/accuracy and samples per
// second; a progress bar with the estimated time left runs on stderr during the epoch.
// --log writes Chainer's LogReport JSON (scripts/plot_log.py draws it), --graph the first
// mini-batch's graph as Graphviz DOT.
#include <unistd.h>

#include <algorithm>
#include <ch/ch.hpp>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <numeric>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "../common/log_report.h"

namespace F = ch::F;

namespace {

struct Options {
  int epochs = 20, hidden = 100, batch = 100, threads = 0;
  double lr = 0.01;
  uint64_t seed = 1;
  std::string optimizer = "sgd", save, data = "/usr/share/datasets/fashion-mnist";
  int64_t limit = 0;       // use only the first N training samples (0: all)
  std::string log, graph;  // LogReport JSON file, Graphviz DOT file ("": none)
};

void usage(FILE* f) {
  std::fprintf(
      f,
      "usage: train_mnist [--epochs N] [--hidden N] [--batch N]\n"
      "                   [--optimizer sgd|sgd-in-backward|momentum|adagrad|adadelta|adam|\n"
      "                                rmsprop]\n"
      "                   [--lr X] [--threads N] [--seed N] [--save FILE.npz]\n"
      "                   [--data DIR] [--limit N] [--log FILE.json] [--graph FILE.dot]\n");
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      usage(stdout);
      std::exit(0);
    }
    if (i + 1 >= argc) {
      usage(stderr);
      std::exit(2);
    }
    const char* v = argv[++i];
    if (a == "--epochs")
      o.epochs = std::atoi(v);
    else if (a == "--hidden")
      o.hidden = std::atoi(v);
    else if (a == "--batch")
      o.batch = std::atoi(v);
    else if (a == "--threads")
      o.threads = std::atoi(v);
    else if (a == "--lr")
      o.lr = std::atof(v);
    else if (a == "--seed")
      o.seed = std::strtoull(v, nullptr, 10);
    else if (a == "--optimizer")
      o.optimizer = v;
    else if (a == "--save")
      o.save = v;
    else if (a == "--data")
      o.data = v;
    else if (a == "--limit")
      o.limit = std::atoll(v);
    else if (a == "--log")
      o.log = v;
    else if (a == "--graph")
      o.graph = v;
    else {
      std::fprintf(stderr, "train_mnist: unknown option %s\n", a.c_str());
      usage(stderr);
      std::exit(2);
    }
  }
  if (o.epochs < 0 || o.hidden < 1 || o.batch < 1) {
    std::fprintf(stderr, "train_mnist: --epochs must be >= 0, --hidden and --batch >= 1\n");
    std::exit(2);
  }
  return o;
}

double now_s() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

// xorshift64*: the example's own generator for shuffling (the same as train_mnist.c), so
// that the order depends only on --seed.
struct Rng {
  uint64_t state = 88172645463325252ull;
  uint64_t next() {
    state ^= state >> 12;
    state ^= state << 25;
    state ^= state >> 27;
    return state * 2685821657736338717ull;
  }
  void shuffle(std::vector<int64_t>& perm) {
    for (int64_t i = static_cast<int64_t>(perm.size()) - 1; i > 0; --i)
      std::swap(perm[i], perm[next() % static_cast<uint64_t>(i + 1)]);
  }
};

// A data set: images (N, 784) float32 in [0, 1] and labels (N,) int32.
struct Dataset {
  ch::Array x, t;
  int64_t n = 0;
};

Dataset load(const std::string& dir, const std::string& prefix, int64_t limit) {
  ch::Array images =
      ch::datasets::read_idx(dir + "/" + prefix + "-images-idx3-ubyte.gz", CH_FLOAT32, 1 / 255.0);
  Dataset d;
  d.t = ch::datasets::read_idx(dir + "/" + prefix + "-labels-idx1-ubyte.gz", CH_INT32);
  d.n = images.shape()[0];
  if (d.t.size() != d.n)
    throw std::runtime_error(prefix + " has " + std::to_string(d.n) + " images but " +
                             std::to_string(d.t.size()) + " labels");
  d.x = images.reshape({d.n, images.size() / d.n});
  if (limit > 0 && limit < d.n) d.n = limit;
  return d;
}

// The rows idx[0..n) of the data set as a batch: variables that need no gradient (the first
// layer then skips computing one); volatile ones record no graph.
std::pair<ch::Variable, ch::Variable> batch(const Dataset& d, const int64_t* idx, int64_t n,
                                            bool is_volatile) {
  ch::Array xb = ch::Array::empty({n, 784}, CH_FLOAT32), tb = ch::Array::empty({n}, CH_INT32);
  const float* x = d.x.data<float>();
  const int32_t* t = d.t.data<int32_t>();
  float* xo = xb.data<float>();
  int32_t* to = tb.data<int32_t>();
  for (int64_t i = 0; i < n; ++i) {
    std::memcpy(xo + i * 784, x + idx[i] * 784, 784 * sizeof(float));
    to[i] = t[idx[i]];
  }
  ch::Variable xv(xb, is_volatile), tv(tb, is_volatile);
  xv.set_requires_grad(false);
  tv.set_requires_grad(false);
  return {xv, tv};
}

// The seed's model: l1, l2, l3 in a FunctionSet.
struct Model {
  ch::Function l1, l2, l3;
  ch::FunctionSet set;
  explicit Model(int64_t hidden)
      : l1(F::Linear(784, hidden)),
        l2(F::Linear(hidden, hidden)),
        l3(F::Linear(hidden, 10)),
        set(ch::FunctionSet::create({{"l1", l1}, {"l2", l2}, {"l3", l3}})) {}

  // The seed's forward(): returns (loss, accuracy).
  std::pair<ch::Variable, ch::Variable> forward(const ch::Variable& x,
                                                const ch::Variable& t) const {
    ch::Variable h1 = F::relu(l1(x));
    ch::Variable h2 = F::relu(l2(h1));
    ch::Variable y = l3(h2);
    return {F::softmax_cross_entropy(y, t), F::accuracy(y, t)};
  }
};

ch::Optimizer make_optimizer(const Options& o) {
  const std::string& name = o.optimizer;
  if (name == "sgd") return ch::Optimizer::sgd(o.lr);
  if (name == "sgd-in-backward") {  // SGD, the weights' step taken in backward
    ch::Optimizer opt = ch::Optimizer::sgd(o.lr);
    opt.set_step_in_backward(true);
    return opt;
  }
  if (name == "momentum") return ch::Optimizer::momentum_sgd(o.lr, 0.9);
  if (name == "adagrad") return ch::Optimizer::adagrad(o.lr, 1e-8);
  if (name == "adadelta") return ch::Optimizer::adadelta(0.95, 1e-6);
  if (name == "adam") return ch::Optimizer::adam(o.lr, 0.9, 0.999, 1.0 - 1e-8, 1e-8);
  if (name == "rmsprop") return ch::Optimizer::rmsprop(o.lr, 0.99, 1e-8);
  std::fprintf(stderr, "train_mnist: unknown optimizer '%s'\n", name.c_str());
  std::exit(2);
}

// The bar, the speed, and the time left in this epoch and in the run (`epochs_after` more
// epochs of `total` samples follow this one), from this epoch's speed so far.
void progress(int64_t done, int64_t total, double t0, int epochs_after) {
  const int width = 30;
  const int fill = static_cast<int>(width * done / (total ? total : 1));
  std::string bar(width, ' ');
  for (int i = 0; i < width; ++i) bar[i] = i < fill ? '=' : (i == fill ? '>' : ' ');
  const double dt = now_s() - t0, rate = dt > 0 ? static_cast<double>(done) / dt : 0.0;
  const double left = rate > 0 ? static_cast<double>(total - done) / rate : 0.0;
  const double run_left = rate > 0 ? left + epochs_after * static_cast<double>(total) / rate : 0.0;
  char eta[32], run[32];
  std::fprintf(stderr, "\r  [%s] %lld/%lld  %.0f samples/s  eta %s (run %s) ", bar.c_str(),
               static_cast<long long>(done), static_cast<long long>(total), rate,
               log_report_hms(left, eta, sizeof eta), log_report_hms(run_left, run, sizeof run));
  if (done == total) std::fprintf(stderr, "\r%*s\r", width + 70, "");
  std::fflush(stderr);
}

int run(const Options& o) {
  const bool show_bar = isatty(2);
  if (o.threads > 0) ch::config::set_num_threads(o.threads);
  ch::config::seed(o.seed);
  Rng rng;
  rng.state ^= o.seed * 0x9E3779B97F4A7C15ull;
  const Dataset train = load(o.data, "train", o.limit);
  const Dataset test = load(o.data, "t10k", 0);
  std::printf(
      "train %lld, test %lld samples; MLP 784-%d-%d-10; %s lr %g; batch %d; %d threads; %s\n",
      static_cast<long long>(train.n), static_cast<long long>(test.n), o.hidden, o.hidden,
      o.optimizer.c_str(), o.lr, o.batch, ch::config::num_threads(), ch::config::blas().c_str());

  Model model(o.hidden);
  ch::Optimizer opt = make_optimizer(o);
  opt.setup(model.set);

  std::vector<int64_t> perm(static_cast<size_t>(train.n)), order(static_cast<size_t>(test.n));
  std::iota(perm.begin(), perm.end(), 0);
  std::iota(order.begin(), order.end(), 0);
  LogReport log = {o.log.empty() ? nullptr : o.log.c_str(), nullptr, 0, 0};
  static const char* const log_keys[4] = {"main/loss", "main/accuracy", "validation/main/loss",
                                          "validation/main/accuracy"};
  long long iteration = 0;
  const double start = now_s();

  for (int epoch = 1; epoch <= o.epochs; ++epoch) {
    double sum_loss = 0, sum_acc = 0;
    const double t0 = now_s();
    int64_t seen = 0;
    rng.shuffle(perm);
    ch::config::set_train(true);
    for (int64_t i = 0; i < train.n; i += o.batch) {
      const int64_t n = std::min<int64_t>(train.n - i, o.batch);
      auto [x, t] = batch(train, perm.data() + i, n, false);
      opt.zero_grads();
      auto [loss, acc] = model.forward(x, t);
      if (!o.graph.empty() && epoch == 1 && i == 0) {
        ch::GraphDotOptions g;
        g.output_names = {"loss"};
        const std::string dot = ch::graph_dot({loss}, g);
        FILE* f = std::fopen(o.graph.c_str(), "w");
        if (!f || std::fputs(dot.c_str(), f) < 0 || std::fclose(f) != 0)
          throw std::runtime_error("cannot write " + o.graph);
        std::printf(
            "wrote the graph of one mini-batch to %s (render it: dot -Tpng %s -o graph.png)\n",
            o.graph.c_str(), o.graph.c_str());
      }
      loss.backward();
      ++iteration;
      opt.update();
      sum_loss += loss.data().item() * static_cast<double>(n);
      sum_acc += acc.data().item() * static_cast<double>(n);
      seen += n;
      if (show_bar && ((i / o.batch) % 10 == 0 || seen == train.n))
        progress(seen, train.n, t0, o.epochs - epoch);
    }
    const double dt = now_s() - t0;

    double test_loss = 0, test_acc = 0;
    ch::config::set_train(false);
    for (int64_t i = 0; i < test.n; i += o.batch) {
      const int64_t n = std::min<int64_t>(test.n - i, o.batch);
      auto [x, t] = batch(test, order.data() + i, n, true);  // volatile: no graph recorded
      auto [loss, acc] = model.forward(x, t);
      test_loss += loss.data().item() * static_cast<double>(n);
      test_acc += acc.data().item() * static_cast<double>(n);
    }
    std::printf("epoch %2d  train loss %.4f acc %.4f  test loss %.4f acc %.4f  %.0f samples/s\n",
                epoch, sum_loss / static_cast<double>(seen), sum_acc / static_cast<double>(seen),
                test_loss / static_cast<double>(test.n), test_acc / static_cast<double>(test.n),
                static_cast<double>(seen) / dt);
    std::fflush(stdout);
    const double values[4] = {
        sum_loss / static_cast<double>(seen), sum_acc / static_cast<double>(seen),
        test_loss / static_cast<double>(test.n), test_acc / static_cast<double>(test.n)};
    log_report_add(&log, epoch, iteration, log_keys, values, 4, now_s() - start);
  }
  if (!o.log.empty())
    std::printf("wrote the training log to %s (plot it: scripts/plot_log.py %s)\n", o.log.c_str(),
                o.log.c_str());
  log_report_free(&log);

  if (!o.save.empty()) {
    model.set.save_npz(o.save);
    std::printf("saved the model to %s (numpy.load reads it; keys l1/W, l1/b, ...)\n",
                o.save.c_str());
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  try {
    return run(o);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "train_mnist: %s\n", e.what());
    return 1;
  }
}
