// chainerc vs libtorch: training speed and peak memory on CPU.
//
// Models (float32, SGD lr 0.01, batch 100, the same synthetic data on both
// sides: pixels uniform in [0, 1), labels uniform in 0..9):
//   mlp        784-100-100-10, ReLU, softmax cross entropy: one epoch (60,000 samples)
//   mlp-large  784-1000-1000-10: one epoch
//   convnet    conv(20, 5x5)-maxpool(2)-conv(50, 5x5)-maxpool(2)-linear(500)-ReLU-linear(10)
//              on 1,000 samples of 1x28x28
// Each (model, threads, side) runs in its own process (this program run again), so that peak
// memory and thread pools are that side's alone. Two memory figures:
//   peak MiB  VmHWM minus the resident size before the model is built: all
//             that the run made resident, library code pages and JIT code
//             included;
//   heap MiB  the peak of bytes held through malloc and friends above the
//             start (heap_tracker.cpp): arrays, tensors, workspaces and
//             packing buffers, without code.
// One warm-up step precedes the timed epoch. The table gives seconds, the
// ratio libtorch / chainerc (above 1: chainerc faster) and both memory figures.
//
// libtorch runs under each of several settings a libtorch user would try (--peer; see
// kPeerSettings: who gets the threads, libgomp's wait policy, OpenBLAS's kernels), and the
// table takes the best per row and names it; a second table lists every setting's time.
//
// Usage: train [--models mlp,mlp-large,convnet] [--threads 1,2] [--samples N]
//              [--repeats N] [--only chainerc|libtorch] [--peer all|NAME,...] [--heap-phases]
//              [--sgd-in-backward]
// --sgd-in-backward: chainerc's SGD takes the weights' step inside backward
// (ch_optimizer_set_step_in_backward); the loop is the same otherwise.

#include <ch/ch.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "bench_util.h"
#include "chainerc_net.h"
#include "heap_tracker.h"

#ifndef CH_BENCH_HAVE_TORCH
#define CH_BENCH_HAVE_TORCH 0
#endif
#if CH_BENCH_HAVE_TORCH
#include <ATen/Parallel.h>
#include <torch/torch.h>
#endif

namespace {

bool heap_phases = false;  // --heap-phases: the chainerc child reports its heap per function

// Resident memory figures of this process from /proc/self/status, in MiB.
double proc_status_mib(const char* key) {
  std::ifstream f("/proc/self/status");
  std::string line;
  const size_t n = std::strlen(key);
  while (std::getline(f, line))
    if (line.compare(0, n, key) == 0) return std::atof(line.c_str() + n + 1) / 1024.0;
  return 0;
}

struct Model {
  std::string name;
  bool conv;
  int64_t hidden;   // MLP hidden units
  int64_t samples;  // per epoch
};

struct Data {
  int64_t n;
  std::vector<float> x;    // n x 784
  std::vector<int32_t> t;  // n
};

Data make_data(int64_t n) {
  Data d{n, std::vector<float>(static_cast<size_t>(n) * 784), std::vector<int32_t>(n)};
  std::mt19937 gen(1234);
  std::uniform_real_distribution<float> u(0.f, 1.f);
  for (float& v : d.x) v = u(gen);
  for (int32_t& v : d.t) v = static_cast<int32_t>(gen() % 10);
  return d;
}

constexpr int64_t kBatch = 100;
constexpr double kMiB = 1024.0 * 1024.0;
constexpr double kLr = 0.01;

struct Result {
  double seconds = 0, peak_mib = 0, loss = 0;
  double heap_mib = 0;  // peak heap (malloc) bytes held above the start, MiB
  std::string blas;     // the child's GEMM library, as it was during the run
  double fastest = 0;   // the epoch at its fastest 20 ms window, s per epoch (see below)
};

// The epoch cut into consecutive windows of whole steps, each at least
// kWindow long (the last, shorter one dropped); the fastest window's time per
// step, times the steps. bench/gemm --step-only gives its GEMM limit as the
// best of five 20 ms windows: on a shared machine a short window's best is
// faster than an epoch's mean, so this is the epoch timed the same way.
// `ends`: when each step ended; `t0`: when the first began.
constexpr double kWindow = 0.020;
double fastest_window(const std::vector<double>& ends, double t0) {
  double best = 0, start = t0;
  size_t first = 0;
  for (size_t i = 0; i < ends.size(); ++i) {
    if (ends[i] - start < kWindow) continue;
    const double per_step = (ends[i] - start) / static_cast<double>(i + 1 - first);
    if (best == 0 || per_step < best) best = per_step;
    start = ends[i];
    first = i + 1;
  }
  if (best == 0 && !ends.empty()) best = (ends.back() - t0) / static_cast<double>(ends.size());
  return best * static_cast<double>(ends.size());
}

// The timed epoch, the same on both sides: step(begin) over each batch of
// `samples`, into r's seconds, last loss and fastest window.
template <typename Step>
void time_epoch(int64_t samples, Step&& step, Result& r) {
  std::vector<double> ends;
  ends.reserve(static_cast<size_t>(samples / kBatch));
  const double t0 = bench::now_s();
  for (int64_t b = 0; b + kBatch <= samples; b += kBatch) {
    r.loss = step(b);
    ends.push_back(bench::now_s());
  }
  r.seconds = bench::now_s() - t0;
  r.fastest = fastest_window(ends, t0);
}

// A configuration of the libtorch side at a run's thread count n, as a libtorch user would
// set it: torch::set_num_threads (libtorch's OpenMP team), the OpenBLAS thread count (every
// OpenBLAS copy in the process: torch::set_num_threads does not reach them), libgomp's wait
// policy (OMP_WAIT_POLICY, read when libgomp loads) and OpenBLAS's kernels
// (OPENBLAS_CORETYPE, read when OpenBLAS loads; "" leaves its own detection).
struct PeerSetting {
  const char* name;
  bool torch_n, blas_n;  // n threads (else 1) for libtorch's OpenMP / for OpenBLAS
  const char* wait;      // OMP_WAIT_POLICY, "" unset (libgomp's default: spin, then sleep)
  const char* coretype;  // OPENBLAS_CORETYPE, "" unset
  const char* what;
};
constexpr PeerSetting kPeerSettings[] = {
    {"n/n", true, true, "", "", "torch::set_num_threads(n), OpenBLAS n threads"},
    {"n/n passive", true, true, "passive", "",
     "torch::set_num_threads(n), OpenBLAS n threads, OMP_WAIT_POLICY=passive"},
    {"n/1 passive", true, false, "passive", "",
     "torch::set_num_threads(n), OpenBLAS 1 thread, OMP_WAIT_POLICY=passive"},
    {"1/n", false, true, "", "", "torch::set_num_threads(1), OpenBLAS n threads"},
    {"n/n passive SKYLAKEX", true, true, "passive", "SKYLAKEX",
     "as n/n passive, with OPENBLAS_CORETYPE=SKYLAKEX"},
};

const PeerSetting* peer_setting(const std::string& name) {
  for (const PeerSetting& p : kPeerSettings)
    if (name == p.name) return &p;
  return nullptr;
}

// Settings that differ at `threads`: at one thread the thread splits and the wait policy
// (no OpenMP team) change nothing, so only distinct kernels remain.
std::vector<const PeerSetting*> peer_settings_for(const std::vector<std::string>& names,
                                                  int threads) {
  std::vector<const PeerSetting*> out;
  for (const std::string& n : names) {
    const PeerSetting* p = peer_setting(n);
    if (!p) bench::die("unknown --peer setting '" + n + "'");
    bool dup = false;
    for (const PeerSetting* q : out)
      dup = dup || (threads == 1 && std::strcmp(q->coretype, p->coretype) == 0);
    if (!dup) out.push_back(p);
  }
  return out;
}

// ---- chainerc -----------------------------------------------------------------------------

// The model on the CPU (bench/chainerc_net.h) fed from host batches.
struct ChainercNet {
  bench::ChainercNet net;
  explicit ChainercNet(const Model& m) : net(m.conv, m.hidden, kLr, ch_device_cpu()) {}

  // One SGD step on samples [begin, begin + kBatch) (zero-copy views of the
  // data); returns the loss.
  double step(const Data& d, int64_t begin) {
    ch_array *xa, *ta;
    const int64_t conv_shape[4] = {kBatch, 1, 28, 28};
    const int64_t flat_shape[2] = {kBatch, 784};
    const int64_t tshape[1] = {kBatch};
    CH_BENCH_CHECK(ch_array_wrap(&xa, CH_FLOAT32, net.conv ? conv_shape : flat_shape,
                                 net.conv ? 4 : 2, const_cast<float*>(d.x.data() + begin * 784),
                                 ch_device_cpu(), nullptr, nullptr));
    CH_BENCH_CHECK(ch_array_wrap(&ta, CH_INT32, tshape, 1, const_cast<int32_t*>(d.t.data() + begin),
                                 ch_device_cpu(), nullptr, nullptr));
    ch_variable *x, *t;
    CH_BENCH_CHECK(ch_variable_new(&x, xa, 0));
    CH_BENCH_CHECK(ch_variable_new(&t, ta, 0));
    CH_BENCH_CHECK(ch_variable_set_requires_grad(x, 0));  // as libtorch's data tensors
    CH_BENCH_CHECK(ch_variable_set_requires_grad(t, 0));
    ch_array_release(xa);
    ch_array_release(ta);
    ch_variable* loss = net.train_step(x, t);
    ch_array* la;
    CH_BENCH_CHECK(ch_variable_data(&la, loss));
    double value = 0;
    CH_BENCH_CHECK(ch_array_get(&value, la, 0));
    ch_array_release(la);
    for (ch_variable* v : {loss, x, t}) ch_variable_release(v);
    return value;
  }
};

Result run_chainerc(const Model& m, const Data& d, int threads) {
  // The child prints this after the run: a GEMM chosen at first use is then known.
  struct Blas {
    Result* r;
    ~Blas() { r->blas = ch_config_blas(); }
  };
  CH_BENCH_CHECK(ch_config_set_num_threads(threads));
  ch_config_seed(1);
  Result r;
  const double rss0 = proc_status_mib("VmRSS:");
  const int64_t heap0 = bench::heap_reset_peak();
  {
    Blas blas{&r};
    ChainercNet net(m);
    if (const char* phases = std::getenv("CH_BENCH_HEAP_PHASES")) {
      // --heap-phases: the heap during the third step (steady state), function by function,
      // on stderr: held after each, and the peak while it ran, above the run's start.
      // (CH_BENCH_HEAP_PHASES=K in the child's environment: step K instead, 0 the first.)
      const int at = std::atoi(phases);
      net.net.on_phase = [&net, heap0, at, calls = 0](const char* what) mutable {
        const bool report = calls / (net.net.conv ? 11 : 9) == at;
        ++calls;
        if (report) {
          ch_memory_stats ms{};
          CH_BENCH_CHECK(ch_memory_stats_get(&ms, ch_device_cpu()));
          std::fprintf(stderr,
                       "heap %-10s held %6.2f MiB, peak during it %6.2f MiB; arrays in use %6.2f "
                       "MiB, cached %6.2f MiB, arrays' peak %6.2f MiB\n",
                       what, static_cast<double>(bench::heap_in_use() - heap0) / kMiB,
                       static_cast<double>(bench::heap_phase_peak() - heap0) / kMiB,
                       static_cast<double>(ms.bytes_in_use) / kMiB,
                       static_cast<double>(ms.bytes_cached) / kMiB,
                       static_cast<double>(ms.peak_bytes_in_use) / kMiB);
        }
        bench::heap_reset_phase_peak();
      };
      bench::heap_reset_phase_peak();
      ch_memory_stats ms{};
      CH_BENCH_CHECK(ch_memory_stats_get(&ms, ch_device_cpu()));
      std::fprintf(stderr, "heap %-10s held %6.2f MiB; arrays in use %6.2f MiB\n", "model",
                   static_cast<double>(bench::heap_in_use() - heap0) / kMiB,
                   static_cast<double>(ms.bytes_in_use) / kMiB);
    }
    net.step(d, 0);  // warm-up
    time_epoch(
        m.samples, [&](int64_t b) { return net.step(d, b); }, r);
  }
  r.peak_mib = proc_status_mib("VmHWM:") - rss0;
  r.heap_mib = static_cast<double>(bench::heap_peak() - heap0) / (1024.0 * 1024.0);
  return r;
}

// ---- libtorch -----------------------------------------------------------------------------

#if CH_BENCH_HAVE_TORCH
struct TorchNetImpl : torch::nn::Module {
  bool conv;
  torch::nn::Conv2d c1{nullptr}, c2{nullptr};
  torch::nn::Linear l1{nullptr}, l2{nullptr}, l3{nullptr};
  explicit TorchNetImpl(const Model& m) : conv(m.conv) {
    if (conv) {
      c1 = register_module("c1", torch::nn::Conv2d(torch::nn::Conv2dOptions(1, 20, 5)));
      c2 = register_module("c2", torch::nn::Conv2d(torch::nn::Conv2dOptions(20, 50, 5)));
      l1 = register_module("l1", torch::nn::Linear(800, 500));
      l2 = register_module("l2", torch::nn::Linear(500, 10));
    } else {
      l1 = register_module("l1", torch::nn::Linear(784, m.hidden));
      l2 = register_module("l2", torch::nn::Linear(m.hidden, m.hidden));
      l3 = register_module("l3", torch::nn::Linear(m.hidden, 10));
    }
  }
  torch::Tensor forward(torch::Tensor x) {
    if (conv) {
      x = torch::max_pool2d(c1(x), 2);
      x = torch::max_pool2d(c2(x), 2);
      x = torch::relu(l1(x.flatten(1)));
      return l2(x);
    }
    x = torch::relu(l1(x));
    x = torch::relu(l2(x));
    return l3(x);
  }
};
TORCH_MODULE(TorchNet);

Result run_torch(const Model& m, const Data& d, int threads, const PeerSetting& p) {
  torch::set_num_threads(p.torch_n ? threads : 1);
  bench::set_openblas_threads(p.blas_n ? threads : 1);
  torch::manual_seed(1);
  Result r;
  r.blas = bench::describe(bench::resolved_gemm_library("sgemm_"));
  const double rss0 = proc_status_mib("VmRSS:");
  const int64_t heap0 = bench::heap_reset_peak();
  {
    TorchNet net(m);
    torch::optim::SGD opt(net->parameters(), torch::optim::SGDOptions(kLr));
    auto step = [&](int64_t begin) {
      auto x = torch::from_blob(
          const_cast<float*>(d.x.data() + begin * 784),
          m.conv ? std::vector<int64_t>{kBatch, 1, 28, 28} : std::vector<int64_t>{kBatch, 784},
          torch::kFloat32);
      auto t = torch::from_blob(const_cast<int32_t*>(d.t.data() + begin), {kBatch}, torch::kInt32)
                   .to(torch::kInt64);
      opt.zero_grad();
      auto loss = torch::nn::functional::cross_entropy(net->forward(x), t);
      loss.backward();
      opt.step();
      return loss.item<double>();
    };
    step(0);
    time_epoch(m.samples, step, r);
  }
  r.peak_mib = proc_status_mib("VmHWM:") - rss0;
  r.heap_mib = static_cast<double>(bench::heap_peak() - heap0) / (1024.0 * 1024.0);
  return r;
}
#endif

// ---- driver -------------------------------------------------------------------------------

// Run one (model, threads, side) in a fresh process: this program again, with
// --child. A fresh exec (not a bare fork) starts the run from the same state a
// user's program has after loading the libraries, so the peak counts what
// training made resident and not code pages the parent had touched already.
// The child prints its Result as one line on stdout, read through a pipe.
bool in_child(const char* self, const std::string& model, int threads, const char* side,
              int64_t samples, const PeerSetting* peer, Result& out) {
  int fd[2];
  if (pipe(fd) != 0) bench::die("pipe failed");
  std::fflush(nullptr);
  const std::string th = std::to_string(threads), n = std::to_string(samples);
  pid_t pid = fork();
  if (pid < 0) bench::die("fork failed");
  if (pid == 0) {
    close(fd[0]);
    if (dup2(fd[1], STDOUT_FILENO) < 0) _exit(4);
    close(fd[1]);
    if (heap_phases && !peer) setenv("CH_BENCH_HEAP_PHASES", "2", 0);  // K given: kept
    // OpenBLAS detects the CPU and its caches itself on both sides, unless a libtorch setting
    // names a core type: an environment that forces one (the Zen 5 VM's sets
    // OPENBLAS_CORETYPE=Haswell, AVX2 kernels at half the AVX-512 rate) is no side's best.
    unsetenv("OPENBLAS_L2_SIZE");
    unsetenv("OPENBLAS_CORETYPE");
    if (peer) {
      for (auto [var, value] : {std::pair{"OMP_WAIT_POLICY", peer->wait},
                                std::pair{"OPENBLAS_CORETYPE", peer->coretype}}) {
        if (*value)
          setenv(var, value, 1);
        else
          unsetenv(var);
      }
    }
    execl(self, self, "--child", model.c_str(), th.c_str(), side, n.c_str(),
          peer ? peer->name : "-", static_cast<char*>(nullptr));
    _exit(5);
  }
  close(fd[1]);
  std::string text;
  char buf[256];
  for (ssize_t got; (got = read(fd[0], buf, sizeof buf)) > 0;) text.append(buf, got);
  close(fd[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  const size_t blas = text.find("\nblas ");
  out.blas = blas == std::string::npos ? "" : text.substr(blas + 6);
  while (!out.blas.empty() && out.blas.back() == '\n') out.blas.pop_back();
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 &&
         std::sscanf(text.c_str(), "result %lf %lf %lf %lf %lf", &out.seconds, &out.peak_mib,
                     &out.loss, &out.heap_mib, &out.fastest) == 5;
}

Model model_named(const std::string& name, int64_t samples) {
  Model m;
  if (name == "mlp")
    m = {name, false, 100, 60000};
  else if (name == "mlp-large")
    m = {name, false, 1000, 60000};
  else if (name == "convnet")
    m = {name, true, 0, 1000};
  else
    bench::die("unknown model " + name);
  if (samples > 0) m.samples = samples;
  return m;
}

// train --child MODEL THREADS SIDE SAMPLES PEER: one run, its Result on stdout.
int run_child(char** argv) {
  const Model m = model_named(argv[2], std::atoll(argv[5]));
  const int threads = std::atoi(argv[3]);
  const std::string side = argv[4];
  const Data d = make_data(m.samples);
  Result r;
  if (side == "chainerc") r = run_chainerc(m, d, threads);
#if CH_BENCH_HAVE_TORCH
  else if (side == "libtorch") {
    const PeerSetting* p = peer_setting(argv[6]);
    if (!p) bench::die(std::string("unknown peer setting ") + argv[6]);
    r = run_torch(m, d, threads, *p);
  }
#endif
  else
    bench::die("no side named " + side + " in this build");
  std::printf("result %.17g %.17g %.17g %.17g %.17g\nblas %s\n", r.seconds, r.peak_mib, r.loss,
              r.heap_mib, r.fastest, r.blas.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 7 && std::strcmp(argv[1], "--child") == 0) return run_child(argv);
  std::vector<std::string> models = {"mlp", "mlp-large", "convnet"};
  std::vector<int> threads = {1, 2};
  std::vector<std::string> peers;
  for (const PeerSetting& p : kPeerSettings) peers.push_back(p.name);
  int64_t samples = 0;  // 0: each model's default
  int repeats = 1;
  bool run_ch = true, run_torch_side = CH_BENCH_HAVE_TORCH;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) bench::die("missing value after " + a);
      return argv[++i];
    };
    if (a == "--models") {
      models = bench::split(next(), ',');
    } else if (a == "--threads") {
      threads.clear();
      for (const std::string& t : bench::split(next(), ','))
        threads.push_back(std::atoi(t.c_str()));
    } else if (a == "--samples") {
      samples = std::atoll(next().c_str());
    } else if (a == "--repeats") {
      repeats = std::max(1, std::atoi(next().c_str()));
    } else if (a == "--only") {
      std::string s = next();
      run_ch = s == "chainerc";
      run_torch_side = s == "libtorch" && CH_BENCH_HAVE_TORCH;
    } else if (a == "--quick") {
      repeats = 1;  // scripts/bench.sh --quick passes it to every benchmark
    } else if (a == "--heap-phases") {
      heap_phases = true;
    } else if (a == "--sgd-in-backward") {
      setenv("CH_BENCH_SGD_IN_BACKWARD", "1", 1);  // read by bench/chainerc_net.h in the child
    } else if (a == "--peer") {
      const std::string s = next();
      if (s != "all") peers = bench::split(s, ',');
    } else {
      std::printf(
          "usage: train [--models mlp,mlp-large,convnet] [--threads 1,2] [--samples N] "
          "[--repeats N] [--only chainerc|libtorch] [--peer all|SETTING,...] [--heap-phases] "
          "[--sgd-in-backward]\n"
          "--heap-phases: chainerc's heap during its third step, function by function (stderr)\n"
          "--sgd-in-backward: chainerc's SGD step of the weights taken in backward\n"
          "libtorch settings (n: the run's thread count; torch threads / OpenBLAS threads):\n");
      for (const PeerSetting& p : kPeerSettings) std::printf("  %-22s %s\n", p.name, p.what);
      return a == "--help" ? 0 : 2;
    }
  }
  for (const std::string& n : peers)
    if (!peer_setting(n)) bench::die("unknown --peer setting '" + n + "' (see --help)");

  std::printf("## chainerc vs libtorch: training on CPU (float32, SGD, batch %lld)\n\n",
              static_cast<long long>(kBatch));
  std::printf(
      "Each (model, threads, side, libtorch setting) in a fresh process, best of %d "
      "interleaved repeats; libtorch's column is its best setting (named), the settings "
      "tried are listed below the table.%s\n\n",
      repeats,
      bench::sgd_in_backward() ? " chainerc takes SGD's step of the weights inside backward "
                                 "(ch_optimizer_set_step_in_backward, --sgd-in-backward)."
                               : "");
  std::printf(
      "| model | threads | samples | chainerc s | libtorch s | libtorch / chainerc | libtorch "
      "setting | chainerc peak MiB | libtorch peak MiB | chainerc heap MiB | libtorch heap MiB | "
      "final loss (chainerc / libtorch) |\n");
  std::printf(
      "| --- | ---: | ---: | ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: | --- |\n");
  struct Tried {
    std::string model;
    int threads;
    const PeerSetting* p;
    Result r;
    bool ok;
  };
  std::vector<Tried> tried;
  std::string fastest_rows;  // the second table's rows
  std::vector<std::string> ch_blas;
  std::vector<std::pair<std::string, std::string>> peer_blas;  // setting, library
  auto note = [](std::vector<std::string>& v, const std::string& s) {
    if (!s.empty() && std::find(v.begin(), v.end(), s) == v.end()) v.push_back(s);
  };
  for (const std::string& name : models) {
    const Model m = model_named(name, samples);
    for (int th : threads) {
      const std::vector<const PeerSetting*> ps = peer_settings_for(peers, th);
      // Best of `repeats` for time; memory from the same runs (the worst).
      auto merge = [](Result& into, const Result& res) {
        into = {std::min(into.seconds, res.seconds),
                std::max(into.peak_mib, res.peak_mib),
                res.loss,
                std::max(into.heap_mib, res.heap_mib),
                res.blas,
                std::min(into.fastest, res.fastest)};
      };
      Result ch{1e30, 0, 0, 0, "", 1e30};
      std::vector<Result> tr(ps.size(), Result{1e30, 0, 0, 0, "", 1e30});
      std::vector<char> tr_ok(ps.size(), run_torch_side);
      bool ch_ok = run_ch;
      for (int r = 0; r < repeats; ++r) {
        Result res;
        if (run_ch) {
          ch_ok = ch_ok && in_child(argv[0], name, th, "chainerc", m.samples, nullptr, res);
          if (ch_ok) merge(ch, res);
        }
        for (size_t k = 0; k < ps.size() && run_torch_side; ++k) {
          tr_ok[k] = tr_ok[k] && in_child(argv[0], name, th, "libtorch", m.samples, ps[k], res);
          if (tr_ok[k]) merge(tr[k], res);
        }
      }
      if (ch_ok) note(ch_blas, ch.blas);
      size_t best = ps.size();
      for (size_t k = 0; k < ps.size(); ++k) {
        if (!run_torch_side) break;
        tried.push_back({name, th, ps[k], tr[k], tr_ok[k] != 0});
        if (!tr_ok[k]) continue;
        const std::pair<std::string, std::string> pb{ps[k]->name, tr[k].blas};
        if (std::find(peer_blas.begin(), peer_blas.end(), pb) == peer_blas.end())
          peer_blas.push_back(pb);
        if (best == ps.size() || tr[k].seconds < tr[best].seconds) best = k;
      }
      const bool tr_any = best < ps.size();
      const Result t = tr_any ? tr[best] : Result{};
      auto fmt = [](bool ok, double v, const char* f) {
        char buf[64];
        if (!ok) return std::string("n/a");
        std::snprintf(buf, sizeof buf, f, v);
        return std::string(buf);
      };
      std::printf("| %s | %d | %lld | %s | %s | %s | %s | %s | %s | %s | %s | %s / %s |\n",
                  name.c_str(), th, static_cast<long long>(m.samples),
                  fmt(ch_ok, ch.seconds, "%.3f").c_str(), fmt(tr_any, t.seconds, "%.3f").c_str(),
                  fmt(ch_ok && tr_any, t.seconds / ch.seconds, "%.2fx").c_str(),
                  tr_any ? ps[best]->name : "n/a", fmt(ch_ok, ch.peak_mib, "%.1f").c_str(),
                  fmt(tr_any, t.peak_mib, "%.1f").c_str(), fmt(ch_ok, ch.heap_mib, "%.1f").c_str(),
                  fmt(tr_any, t.heap_mib, "%.1f").c_str(), fmt(ch_ok, ch.loss, "%.4f").c_str(),
                  fmt(tr_any, t.loss, "%.4f").c_str());
      std::fflush(stdout);
      char row[256];
      std::snprintf(row, sizeof row, "| %s | %d | %s | %s | %s | %s |\n", name.c_str(), th,
                    fmt(ch_ok, ch.seconds, "%.3f").c_str(), fmt(ch_ok, ch.fastest, "%.3f").c_str(),
                    fmt(tr_any, t.seconds, "%.3f").c_str(), fmt(tr_any, t.fastest, "%.3f").c_str());
      fastest_rows += row;
    }
  }

  std::printf(
      "\nThe same runs at their fastest 20 ms: each epoch cut into consecutive windows of at "
      "least 20 ms (whole steps), the fastest window's time per step times the epoch's steps, "
      "best over the repeats (libtorch: the setting above). `bench/gemm --step-only` gives the "
      "GEMM limit as the best of five 20 ms windows; compare it with this, and the epoch with a "
      "limit timed over windows as long as an epoch (`--min-time`).\n\n"
      "| model | threads | chainerc s | chainerc fastest 20 ms, s/epoch | libtorch s | libtorch "
      "fastest 20 ms, s/epoch |\n| --- | ---: | ---: | ---: | ---: | ---: |\n%s",
      fastest_rows.c_str());
  std::printf("\n- chainerc BLAS (ch_config_blas() after the run): ");
  if (ch_blas.empty()) std::printf("%s (before any run)\n", ch_config_blas());
  for (size_t i = 0; i < ch_blas.size(); ++i)
    std::printf("%s%s", i ? "; " : "", ch_blas[i].c_str());
  if (!ch_blas.empty()) std::printf("\n");
#if CH_BENCH_HAVE_TORCH
  std::printf("- libtorch %s, BLAS_INFO=%s; its sgemm_ as each setting's run resolved it:\n",
              TORCH_VERSION, bench::torch_blas_info(at::show_config()).c_str());
  for (const auto& [setting, lib] : peer_blas)
    std::printf("  - %s: %s\n", setting.c_str(), lib.c_str());
  if (!tried.empty()) {
    std::printf("\nEvery libtorch setting tried (seconds, best of %d):\n\n", repeats);
    std::printf("| model | threads | setting | libtorch s | peak MiB | heap MiB |\n");
    std::printf("| --- | ---: | --- | ---: | ---: | ---: |\n");
    for (const Tried& t : tried) {
      if (!t.ok) {
        std::printf("| %s | %d | %s | failed | | |\n", t.model.c_str(), t.threads, t.p->name);
        continue;
      }
      std::printf("| %s | %d | %s | %.3f | %.1f | %.1f |\n", t.model.c_str(), t.threads, t.p->name,
                  t.r.seconds, t.r.peak_mib, t.r.heap_mib);
    }
    std::printf("\nSettings: ");
    for (const PeerSetting& p : kPeerSettings) std::printf("%s: %s. ", p.name, p.what);
    std::printf("\n");
  }
#endif
  return 0;
}
