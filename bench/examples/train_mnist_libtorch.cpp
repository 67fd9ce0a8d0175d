// examples/mnist/train_mnist.c as a standalone libtorch program: the same loop, for timing
// the example against what a libtorch user's program gets (bench/examples/run.sh).
//
// The same as the example, step for step:
// - data: the IDX files (gzip'd) of --data, train and t10k, pixels / 255 as float32; --limit
//   keeps the first N training samples;
// - the model: 784-H-H-10 MLP, ReLU, weights drawn from N(0, 1/in) (Chainer's and the
//   example's initialisation, wscale 1), biases 0;
// - every epoch the example's own shuffle (xorshift64* seeded with --seed exactly as the
//   example seeds it, Fisher-Yates), so both see the same mini-batches in the same order;
// - each mini-batch gathered row by row into one reused buffer and wrapped (from_blob), then
//   zero_grad, forward, softmax cross entropy, accuracy, backward, the optimizer's update, the
//   loss and the accuracy read back as numbers;
// - after each epoch the test set in order, without a graph (NoGradGuard), and the same line
//   the example prints.
//
// Threads: --threads N sets torch::set_num_threads(N) and every OpenBLAS copy in the process
// to N threads (torch::set_num_threads does not reach OpenBLAS); --blas-threads M overrides the
// OpenBLAS count. The first line names the library that libtorch's sgemm_ resolves to.
//
//   train_mnist_libtorch [--epochs 20] [--hidden 100] [--batch 100] [--optimizer sgd|adam]
//                        [--lr 0.01] [--threads N] [--blas-threads M] [--seed 1]
//                        [--data /usr/share/datasets/fashion-mnist] [--limit N]

#include <ATen/Parallel.h>
#include <torch/torch.h>
#include <zlib.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "../peer_blas.h"

namespace {

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "train_mnist_libtorch: %s\n", what.c_str());
  std::exit(1);
}

// The example's xorshift64* and shuffle (examples/common/mnist_mlp.h).
uint64_t rng_state = 88172645463325252ull;
uint64_t rng_next() {
  rng_state ^= rng_state >> 12;
  rng_state ^= rng_state << 25;
  rng_state ^= rng_state >> 27;
  return rng_state * 2685821657736338717ull;
}
void shuffle(std::vector<int64_t>& perm) {
  const int64_t n = static_cast<int64_t>(perm.size());
  for (int64_t i = n - 1; i > 0; --i) {
    const int64_t j = static_cast<int64_t>(rng_next() % static_cast<uint64_t>(i + 1));
    std::swap(perm[i], perm[j]);
  }
}

// An IDX file (gzip'd): its dimensions and its bytes.
struct Idx {
  std::vector<int64_t> dims;
  std::vector<uint8_t> bytes;
};

Idx read_idx(const std::string& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  if (!f) die("cannot open " + path);
  std::unique_ptr<gzFile_s, int (*)(gzFile)> closer(f, gzclose);
  auto read = [&](void* dst, size_t n) {
    size_t done = 0;
    while (done < n) {
      const int got = gzread(f, static_cast<char*>(dst) + done,
                             static_cast<unsigned>(std::min<size_t>(n - done, 1u << 30)));
      if (got <= 0) die(path + ": truncated or corrupt");
      done += static_cast<size_t>(got);
    }
  };
  uint8_t magic[4];
  read(magic, 4);
  if (magic[0] != 0 || magic[1] != 0 || magic[2] != 0x08) die(path + ": not an IDX file of bytes");
  Idx idx;
  size_t total = 1;
  for (int d = 0; d < magic[3]; ++d) {
    uint8_t b[4];
    read(b, 4);
    const int64_t v = (int64_t{b[0]} << 24) | (int64_t{b[1]} << 16) | (int64_t{b[2]} << 8) | b[3];
    idx.dims.push_back(v);
    total *= static_cast<size_t>(v);
  }
  idx.bytes.resize(total);
  read(idx.bytes.data(), total);
  return idx;
}

struct Dataset {
  std::vector<float> x;    // n x 784, in [0, 1]
  std::vector<int64_t> t;  // n
  int64_t n = 0;
};

Dataset load(const std::string& dir, const char* prefix, int64_t limit) {
  const Idx images = read_idx(dir + "/" + prefix + "-images-idx3-ubyte.gz");
  const Idx labels = read_idx(dir + "/" + prefix + "-labels-idx1-ubyte.gz");
  Dataset d;
  d.n = images.dims.empty() ? 0 : images.dims[0];
  if (labels.bytes.size() != static_cast<size_t>(d.n) ||
      images.bytes.size() != static_cast<size_t>(d.n) * 784u)
    die(std::string(prefix) + ": images and labels do not match 784-pixel images");
  d.x.resize(images.bytes.size());
  for (size_t i = 0; i < d.x.size(); ++i) d.x[i] = static_cast<float>(images.bytes[i] / 255.0);
  d.t.assign(labels.bytes.begin(), labels.bytes.end());
  if (limit > 0 && limit < d.n) d.n = limit;
  return d;
}

struct MlpImpl : torch::nn::Module {
  torch::nn::Linear l1{nullptr}, l2{nullptr}, l3{nullptr};
  explicit MlpImpl(int64_t hidden) {
    l1 = register_module("l1", torch::nn::Linear(784, hidden));
    l2 = register_module("l2", torch::nn::Linear(hidden, hidden));
    l3 = register_module("l3", torch::nn::Linear(hidden, 10));
    torch::NoGradGuard no_grad;
    for (torch::nn::Linear* l : {&l1, &l2, &l3}) {
      (*l)->weight.normal_(0.0, std::sqrt(1.0 / static_cast<double>((*l)->weight.size(1))));
      (*l)->bias.zero_();
    }
  }
  torch::Tensor forward(torch::Tensor x) {
    x = torch::relu(l1(x));
    x = torch::relu(l2(x));
    return l3(x);
  }
};
TORCH_MODULE(Mlp);

// Copy the rows idx[0..n) of the data set into the batch's buffers (the example's gather).
void gather(const Dataset& d, const int64_t* idx, int64_t n, float* xb, int64_t* tb) {
  for (int64_t i = 0; i < n; ++i) {
    std::memcpy(xb + i * 784, d.x.data() + idx[i] * 784, 784 * sizeof(float));
    tb[i] = d.t[idx[i]];
  }
}

}  // namespace

int main(int argc, char** argv) {
  int epochs = 20, hidden = 100, batch = 100, threads = 0, blas_threads = 0;
  double lr = 0.01;
  uint64_t seed = 1;
  int64_t limit = 0;
  std::string optimizer = "sgd", data = "/usr/share/datasets/fashion-mnist";
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--help" || a == "-h" || i + 1 >= argc) {
      std::printf(
          "usage: train_mnist_libtorch [--epochs N] [--hidden N] [--batch N] "
          "[--optimizer sgd|adam] [--lr X] [--threads N] [--blas-threads M] [--seed N] "
          "[--data DIR] [--limit N]\n");
      return a == "--help" || a == "-h" ? 0 : 2;
    }
    const char* v = argv[++i];
    if (a == "--epochs")
      epochs = std::atoi(v);
    else if (a == "--hidden")
      hidden = std::atoi(v);
    else if (a == "--batch")
      batch = std::atoi(v);
    else if (a == "--threads")
      threads = std::atoi(v);
    else if (a == "--blas-threads")
      blas_threads = std::atoi(v);
    else if (a == "--lr")
      lr = std::atof(v);
    else if (a == "--seed")
      seed = std::strtoull(v, nullptr, 10);
    else if (a == "--optimizer")
      optimizer = v;
    else if (a == "--data")
      data = v;
    else if (a == "--limit")
      limit = std::atoll(v);
    else
      die("unknown option " + a);
  }
  if (epochs < 0 || hidden < 1 || batch < 1)
    die("--epochs must be >= 0, --hidden and --batch >= 1");
  if (optimizer != "sgd" && optimizer != "adam") die("--optimizer must be sgd or adam");

  if (threads > 0) torch::set_num_threads(threads);
  if (blas_threads > 0 || threads > 0)
    bench::set_openblas_threads(blas_threads > 0 ? blas_threads : threads);
  torch::manual_seed(seed);
  rng_state ^= seed * 0x9E3779B97F4A7C15ull;  // as the example seeds its shuffle
  const Dataset train = load(data, "train", limit);
  const Dataset test = load(data, "t10k", 0);
  std::printf(
      "train %lld, test %lld samples; MLP 784-%d-%d-10; %s lr %g; batch %d; libtorch %s, %d "
      "threads; sgemm_: %s\n",
      static_cast<long long>(train.n), static_cast<long long>(test.n), hidden, hidden,
      optimizer.c_str(), lr, batch, TORCH_VERSION, torch::get_num_threads(),
      bench::describe(bench::resolved_gemm_library("sgemm_")).c_str());

  Mlp model(hidden);
  std::unique_ptr<torch::optim::Optimizer> opt;
  if (optimizer == "sgd")
    opt = std::make_unique<torch::optim::SGD>(model->parameters(), torch::optim::SGDOptions(lr));
  else  // the example's Adam: alpha lr, beta1 0.9, beta2 0.999, eps 1e-8
    opt = std::make_unique<torch::optim::Adam>(
        model->parameters(), torch::optim::AdamOptions(lr).betas({0.9, 0.999}).eps(1e-8));

  std::vector<float> xb(static_cast<size_t>(batch) * 784);
  std::vector<int64_t> tb(static_cast<size_t>(batch));
  std::vector<int64_t> perm(static_cast<size_t>(train.n)), order(static_cast<size_t>(test.n));
  for (int64_t i = 0; i < train.n; ++i) perm[i] = i;
  for (int64_t i = 0; i < test.n; ++i) order[i] = i;

  for (int epoch = 1; epoch <= epochs; ++epoch) {
    double sum_loss = 0, sum_acc = 0;
    int64_t seen = 0;
    const double t0 = now_s();
    shuffle(perm);
    model->train();
    for (int64_t i = 0; i < train.n; i += batch) {
      const int64_t n = std::min<int64_t>(train.n - i, batch);
      gather(train, perm.data() + i, n, xb.data(), tb.data());
      const torch::Tensor x = torch::from_blob(xb.data(), {n, 784}, torch::kFloat32);
      const torch::Tensor t = torch::from_blob(tb.data(), {n}, torch::kInt64);
      opt->zero_grad();
      const torch::Tensor y = model->forward(x);
      const torch::Tensor loss = torch::nn::functional::cross_entropy(y, t);
      const torch::Tensor acc = y.argmax(1).eq(t).to(torch::kFloat32).mean();
      loss.backward();
      opt->step();
      sum_loss += loss.item<double>() * static_cast<double>(n);
      sum_acc += acc.item<double>() * static_cast<double>(n);
      seen += n;
    }
    const double dt = now_s() - t0;

    double test_loss = 0, test_acc = 0;
    {
      torch::NoGradGuard no_grad;
      model->eval();
      for (int64_t i = 0; i < test.n; i += batch) {
        const int64_t n = std::min<int64_t>(test.n - i, batch);
        gather(test, order.data() + i, n, xb.data(), tb.data());
        const torch::Tensor x = torch::from_blob(xb.data(), {n, 784}, torch::kFloat32);
        const torch::Tensor t = torch::from_blob(tb.data(), {n}, torch::kInt64);
        const torch::Tensor y = model->forward(x);
        test_loss +=
            torch::nn::functional::cross_entropy(y, t).item<double>() * static_cast<double>(n);
        test_acc +=
            y.argmax(1).eq(t).to(torch::kFloat32).mean().item<double>() * static_cast<double>(n);
      }
    }
    std::printf("epoch %2d  train loss %.4f acc %.4f  test loss %.4f acc %.4f  %.0f samples/s\n",
                epoch, sum_loss / static_cast<double>(seen), sum_acc / static_cast<double>(seen),
                test_loss / static_cast<double>(test.n), test_acc / static_cast<double>(test.n),
                static_cast<double>(seen) / dt);
    std::fflush(stdout);
  }
  return 0;
}
