// bench/gemm: the GEMM rate each installed library reaches on the models'
// shapes, and what chainerc's choice reaches (bench/README.md).
//
// Shapes: the MLPs of bench/train (784-100-100-10 and 784-1000-1000-10 at
// batch 100: forward y = x W^T, backward gW += gy^T x and gx = gy W, no gx for
// the first layer) and the convnet's (its im2col GEMMs as Convolution2D calls
// them on a chunk of samples, and its two Linear layers). Columns: each
// library called one thread per block of chainerc's pool (what gemm() does;
// with threads, the better of C left whole and C in one block per thread),
// the same library with its own threads (OpenBLAS's pool, oneDNN's OpenMP,
// BLIS's pool) at two threads, and chainerc::cpu::gemm after its choice. The
// figure is the best GFLOP/s over interleaved repeats.
//
// Then, per MLP, the training step's GEMM sequence: the eight GEMMs of one
// step in the order forward and backward run them, on operands of the real
// sizes wired as the step wires them (h1 = x W1^T feeds layer 2 and gW2, gh2
// feeds gW2 and gh1, ...), gW with beta 0 as the step runs them after
// zero_grads (lazy zeroing), timed with each library forced and with
// chainerc's choice (and that choice with beta 1, the eager-zeroing step).
// Unlike the rows above (one shape repeated, its operands hot in the cache),
// this is what a step can reach: the 4 MB weight of a 1000x1000 layer does
// not stay in a 1 MB L2 between its forward and backward GEMMs.
//
// Usage: gemm [--threads 1,2] [--only SUBSTRING] [--repeats N] [--min-time MS]
//             [--no-float64] [--no-step | --step-only]
#include "backend/cpu/gemm.h"

#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "backend/cpu/gemm_blis.h"
#include "backend/cpu/parallel.h"
#include "step_sequence.h"

#if CH_HAVE_DNNL
#include <omp.h>
#include <oneapi/dnnl/dnnl.h>
#endif

using namespace chainerc;
using cpu::GemmLibrary;

namespace {

struct Shape {
  std::string model, op;
  bool ta, tb;
  int64_t m, n, k;
  int64_t calls_per_epoch;  // for the epoch's GEMM time (0: not summed)
  bool f64 = false;
};

// Linear(in, out) at batch b: forward x W^T, gW += gy^T x, gx = gy W.
void linear(std::vector<Shape>& out, const std::string& model, const std::string& layer, int64_t b,
            int64_t in, int64_t out_size, bool gx, int64_t steps, bool f64 = false) {
  out.push_back({model, layer + " y=xW^T", false, true, b, out_size, in, steps, f64});
  out.push_back({model, layer + " gW=gy^Tx", true, false, out_size, in, b, steps, f64});
  if (gx) out.push_back({model, layer + " gx=gyW", false, false, b, in, out_size, steps, f64});
}

std::vector<Shape> shapes(bool with_f64) {
  std::vector<Shape> s;
  const int64_t steps = 600;  // one epoch of 60,000 samples at batch 100
  linear(s, "mlp", "l1 784-100", 100, 784, 100, false, steps);
  linear(s, "mlp", "l2 100-100", 100, 100, 100, true, steps);
  linear(s, "mlp", "l3 100-10", 100, 100, 10, true, steps);
  linear(s, "mlp-large", "l1 784-1000", 100, 784, 1000, false, steps);
  linear(s, "mlp-large", "l2 1000-1000", 100, 1000, 1000, true, steps);
  linear(s, "mlp-large", "l3 1000-10", 100, 1000, 10, true, steps);
  // The convnet's convolutions as convolution_2d.cpp calls gemm: on a chunk
  // of 9 samples (conv1: 25 rows x 576 positions) and of 4 samples (conv2:
  // 500 rows x 64 positions), forward W col, gW += gy col^T, gcol = W^T gy.
  s.push_back({"convnet", "conv1 y=W col", false, false, 20, 9 * 576, 25, 0});
  s.push_back({"convnet", "conv1 gW=gy col^T", false, true, 20, 25, 9 * 576, 0});
  s.push_back({"convnet", "conv2 y=W col", false, false, 50, 4 * 64, 500, 0});
  s.push_back({"convnet", "conv2 gW=gy col^T", false, true, 50, 500, 4 * 64, 0});
  s.push_back({"convnet", "conv2 gcol=W^T gy", true, false, 500, 4 * 64, 50, 0});
  linear(s, "convnet", "l1 800-500", 100, 800, 500, true, 0);
  if (with_f64) linear(s, "mlp-large float64", "l2 1000-1000", 100, 1000, 1000, true, 0, true);
  return s;
}

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// A way of running the shape's GEMM; best is the best rate seen (flop/s).
struct Variant {
  std::string name;
  std::function<void()> call;
  long iters = 1;
  double best = 0;
};

// Linear's forward, y = x W^T: after zero_grads it has W's gradient as its
// product's workspace (Linear, cpu::GemmWorkspace), so the libraries and
// chainerc's choice are timed with one here, as the step runs them.
bool linear_forward(const Shape& s) { return s.op.find("y=xW^T") != std::string::npos; }

template <typename T>
struct Operands {
  std::vector<T> a, b, c;
  // A Linear forward's workspace: its W's gradient, pending zero after
  // zero_grads (cpu::GemmWorkspace), n x k.
  std::vector<T> workspace;
  cpu::GemmWorkspace lent() { return bench::workspace_of(workspace); }
  Operands(const Shape& s) {
    std::mt19937 rng(1);
    std::uniform_real_distribution<float> u(-1, 1);
    a.resize(size_t(s.m * s.k));
    b.resize(size_t(s.k * s.n));
    c.resize(size_t(s.m * s.n));
    for (T& v : a) v = u(rng);
    for (T& v : b) v = u(rng);
    if (linear_forward(s)) workspace.resize(size_t(s.n * s.k));
  }
};

// The library's own threading at `threads`, called from one thread.
template <typename T>
void own_threads(GemmLibrary lib, int threads, const Shape& s, Operands<T>& o) {
  const int64_t lda = s.ta ? s.m : s.k, ldb = s.tb ? s.k : s.n;
  const auto ta = s.ta ? CblasTrans : CblasNoTrans, tb = s.tb ? CblasTrans : CblasNoTrans;
  switch (lib) {
    case GemmLibrary::openblas:
      openblas_set_num_threads(threads);
      if constexpr (std::is_same_v<T, float>)
        cblas_sgemm(CblasRowMajor, ta, tb, int(s.m), int(s.n), int(s.k), 1.f, o.a.data(), int(lda),
                    o.b.data(), int(ldb), 0.f, o.c.data(), int(s.n));
      else
        cblas_dgemm(CblasRowMajor, ta, tb, int(s.m), int(s.n), int(s.k), 1., o.a.data(), int(lda),
                    o.b.data(), int(ldb), 0., o.c.data(), int(s.n));
      openblas_set_num_threads(1);
      return;
    case GemmLibrary::onednn:
#if CH_HAVE_DNNL
      if constexpr (std::is_same_v<T, float>) {
        omp_set_num_threads(threads);
        dnnl_sgemm(s.ta ? 'T' : 'N', s.tb ? 'T' : 'N', s.m, s.n, s.k, 1.f, o.a.data(), lda,
                   o.b.data(), ldb, 0.f, o.c.data(), s.n);
      }
#endif
      return;
    case GemmLibrary::blis:
      cpu::blis::set_threads(threads);
      if constexpr (std::is_same_v<T, float>)
        cpu::blis::sgemm(s.ta, s.tb, s.m, s.n, s.k, 1.f, o.a.data(), lda, o.b.data(), ldb, 0.f,
                         o.c.data(), s.n);
      else
        cpu::blis::dgemm(s.ta, s.tb, s.m, s.n, s.k, 1., o.a.data(), lda, o.b.data(), ldb, 0.,
                         o.c.data(), s.n);
      cpu::blis::set_threads(1);
      return;
    case GemmLibrary::libxsmm:        // its kernels have no threads of their own
    case GemmLibrary::onednn_matmul:  // its OpenMP threads: as oneDNN's sgemm's
      return;
  }
}

// Whether the library has its own threading for bench's "own threads" columns
// (oneDNN's matmul shares its sgemm's OpenMP team, shown there).
bool has_own_threads(GemmLibrary lib) {
  return lib != GemmLibrary::libxsmm && lib != GemmLibrary::onednn_matmul;
}

struct Row {
  Shape shape;
  int threads;
  std::vector<Variant> variants;
  std::string chosen;
};

template <typename T>
Row measure(const Shape& s, int threads, int repeats, double min_time) {
  cpu::set_num_threads(threads);
  Operands<T> o(s);
  const int64_t lda = s.ta ? s.m : s.k, ldb = s.tb ? s.k : s.n;
  const bool f64 = std::is_same_v<T, double>;
  Row row{s, threads, {}, ""};
  // Each library on the pool: with threads, the best of C in one block and
  // C in one block per thread (the two ways gemm() tries).
  for (GemmLibrary lib : cpu::gemm_libraries(f64))
    for (cpu::GemmBlocks blocks : {cpu::GemmBlocks::one, cpu::GemmBlocks::per_thread}) {
      if (threads == 1 && blocks == cpu::GemmBlocks::per_thread) continue;
      // libxsmm: B^T only through a workspace
      if (!cpu::gemm_library_supports(lib, f64, s.ta, s.tb, linear_forward(s))) continue;
      row.variants.push_back({std::string(cpu::gemm_library_name(lib)) +
                                  (blocks == cpu::GemmBlocks::one ? "|one" : "|split"),
                              [=, &o] {
                                cpu::gemm_using(lib, s.ta, s.tb, s.m, s.n, s.k, T(1), o.a.data(),
                                                lda, o.b.data(), ldb, T(0), o.c.data(), s.n, blocks,
                                                o.lent());
                              }});
    }
  if (threads > 1)
    for (GemmLibrary lib : cpu::gemm_libraries(f64))
      if (has_own_threads(lib))
        row.variants.push_back({std::string(cpu::gemm_library_name(lib)) + " own threads",
                                [=, &o] { own_threads(lib, threads, s, o); }});
  row.variants.push_back({"chainerc", [=, &o] {
                            cpu::gemm(s.ta, s.tb, s.m, s.n, s.k, T(1), o.a.data(), lda, o.b.data(),
                                      ldb, T(0), o.c.data(), s.n, o.lent());
                          }});
  // Calibrate (which also lets chainerc's gemm make its choice on its first
  // calls). chainerc goes first, before the libraries' own pools have run:
  // their workers keep spinning for a while after each call and would be in
  // the way of the measurement; the previous row's may still be spinning, so
  // with threads there is a pause first (OpenBLAS's threads spin for 2^28
  // cycles, about 0.1 s here, before they sleep).
  if (threads > 1) std::this_thread::sleep_for(std::chrono::milliseconds(300));
  std::rotate(row.variants.begin(), row.variants.end() - 1, row.variants.end());
  for (Variant& v : row.variants) {
    for (int i = 0; i < 8 * cpu::kGemmSamples; ++i) v.call();
    for (;;) {
      const double t0 = now();
      for (long i = 0; i < v.iters; ++i) v.call();
      if (now() - t0 >= min_time || v.iters > (1L << 24)) break;
      v.iters *= 2;
    }
  }
  const double flop = 2.0 * double(s.m) * double(s.n) * double(s.k);
  // The libraries' own pools last: OpenBLAS's threads go on spinning (with
  // sched_yield) for a while after each call, oneDNN's OpenMP workers too, and
  // taking turns with them would time the pool's variants and chainerc's on a
  // second core those threads hold (a split at the one-thread rate).
  auto own = [](const Variant& v) { return v.name.find(" own threads") != std::string::npos; };
  for (bool own_pass : {false, true})
    for (int r = 0; r < repeats; ++r)
      for (Variant& v : row.variants) {
        if (own(v) != own_pass) continue;
        const double t0 = now();
        for (long i = 0; i < v.iters; ++i) v.call();
        v.best = std::max(v.best, flop * double(v.iters) / (now() - t0));
      }
  const int c = cpu::gemm_choice(f64, s.ta, s.tb, s.m, s.n, s.k, linear_forward(s));
  row.chosen = c < 0 ? "?" : cpu::gemm_library_name(GemmLibrary(c));
  return row;
}

// Milliseconds per step of the sequence for each library forced, chainerc's
// choice, its choice with beta 1, and "each GEMM at its best": the sum over
// the sequence's GEMMs of the fastest library's time for that GEMM, each
// timed inside its library's forced sequence (the limit a per-GEMM choice
// could reach): best of `repeats` interleaved runs of at least min_time each.
std::vector<std::pair<std::string, double>> measure_step(int64_t hidden, int threads, int repeats,
                                                         double min_time) {
  cpu::set_num_threads(threads);
  bench::StepSequence seq(hidden);
  struct V {
    std::string name;
    int lib;
    float beta;
    long iters = 1;
    double best = 1e30;
    double gemm_best[bench::StepSequence::kGemms] = {1e30, 1e30, 1e30, 1e30,
                                                     1e30, 1e30, 1e30, 1e30};
  };
  std::vector<V> vs;
  vs.push_back({"chainerc", -1, 0.f});
  vs.push_back({"chainerc beta 1", -1, 1.f});
  for (GemmLibrary lib : cpu::gemm_libraries(false))
    vs.push_back({cpu::gemm_library_name(lib), int(lib), 0.f});
  for (V& v : vs) {
    for (int i = 0; i < 4 * cpu::kGemmSamples; ++i) seq.run(v.lib, v.beta);  // choices made here
    for (;;) {
      const double t0 = now();
      for (long i = 0; i < v.iters; ++i) seq.run(v.lib, v.beta);
      if (now() - t0 >= min_time || v.iters > (1L << 20)) break;
      v.iters *= 2;
    }
  }
  for (int r = 0; r < repeats; ++r)
    for (V& v : vs) {
      const double t0 = now();
      for (long i = 0; i < v.iters; ++i) seq.run(v.lib, v.beta);
      v.best = std::min(v.best, (now() - t0) / double(v.iters));
    }
  // The per-GEMM times: separate runs, so that the timers' own cost stays out
  // of the columns above.
  for (int r = 0; r < repeats; ++r)
    for (V& v : vs) {
      if (v.lib < 0) continue;
      double seconds[bench::StepSequence::kGemms] = {};
      for (long i = 0; i < v.iters; ++i) seq.run(v.lib, v.beta, seconds);
      for (int j = 0; j < bench::StepSequence::kGemms; ++j)
        v.gemm_best[j] = std::min(v.gemm_best[j], seconds[j] / double(v.iters));
    }
  double each_best = 0;
  for (int j = 0; j < bench::StepSequence::kGemms; ++j) {
    double b = 1e30;
    for (const V& v : vs)
      if (v.lib >= 0) b = std::min(b, v.gemm_best[j]);
    each_best += b;
  }
  std::vector<std::pair<std::string, double>> out;
  for (const V& v : vs) out.emplace_back(v.name, v.best * 1e3);
  out.emplace_back("each GEMM at its best", each_best * 1e3);
  return out;
}

std::vector<int> parse_ints(const char* s) {
  std::vector<int> out;
  for (const char* p = s; *p;) {
    out.push_back(std::atoi(p));
    while (*p && *p != ',') ++p;
    if (*p == ',') ++p;
  }
  return out;
}

// The GEMM choices' disk cache, copied for this run and removed at its end:
// bench/gemm reads the choices the programs made (its chainerc column is
// theirs), and what it decides itself on its back-to-back calls stays out of
// the programs' cache (a large class is judged "in context" on the calls
// that come next, which here are back to back too).
class PrivateGemmCache {
 public:
  PrivateGemmCache() {
    const std::string shared = cpu::gemm_cache_directory();
    if (shared.empty()) return;  // off: stays off
    std::string templ = (std::filesystem::temp_directory_path() / "bench-gemm-XXXXXX").string();
    if (!mkdtemp(templ.data())) {  // then this run measures everything, writing nothing
      cpu::set_gemm_cache_directory("");
      return;
    }
    dir_ = templ;
    shared_ = shared;
    std::error_code ec;
    std::filesystem::copy(shared, dir_, std::filesystem::copy_options::recursive, ec);
    cpu::set_gemm_cache_directory(dir_.c_str());
  }
  ~PrivateGemmCache() {
    if (dir_.empty()) return;
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  PrivateGemmCache(const PrivateGemmCache&) = delete;
  PrivateGemmCache& operator=(const PrivateGemmCache&) = delete;
  // The programs' cache it copied ("" if none).
  const std::string& shared() const { return shared_; }

 private:
  std::string dir_, shared_;
};

}  // namespace

int main(int argc, char** argv) {
  std::vector<int> threads = {1, 2};
  std::string only;
  int repeats = 5;
  double min_time = 0.02;
  bool with_f64 = true, with_shapes = true, with_step = true;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> const char* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "gemm: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--threads")
      threads = parse_ints(next());
    else if (a == "--only")
      only = next();
    else if (a == "--repeats")
      repeats = std::max(1, std::atoi(next()));
    else if (a == "--min-time")
      min_time = std::atof(next()) / 1000;
    else if (a == "--no-float64")
      with_f64 = false;
    else if (a == "--no-step")
      with_step = false;
    else if (a == "--step-only")
      with_shapes = false;
    else {
      std::printf(
          "usage: gemm [--threads 1,2] [--only SUBSTRING] [--repeats N (5)] [--min-time MS (20)] "
          "[--no-float64] [--no-step | --step-only]\n");
      return a == "--help" ? 0 : 2;
    }
  }
  const PrivateGemmCache private_cache;
  // Column order: the candidates through the pool, their own threads, chainerc.
  std::vector<std::string> columns;
  for (GemmLibrary lib : cpu::gemm_libraries(false)) columns.push_back(cpu::gemm_library_name(lib));
  for (GemmLibrary lib : cpu::gemm_libraries(false))
    if (has_own_threads(lib))
      columns.push_back(std::string(cpu::gemm_library_name(lib)) + " own threads");

  std::printf(
      "GFLOP/s, best of %d interleaved repeats of >= %.0f ms; library columns: one library "
      "thread per block of chainerc's pool (with threads, the better of C whole and C in one "
      "block per thread); \"own threads\": the library's threading at "
      "the row's count, called from one thread.\n\n",
      repeats, min_time * 1000);
  std::printf("| model | GEMM | T | m x n x k | threads |");
  for (const std::string& c : columns) std::printf(" %s |", c.c_str());
  std::printf(" chainerc (choice) | chainerc / best |\n|---|---|---|---|---|");
  for (size_t i = 0; i < columns.size(); ++i) std::printf("---|");
  std::printf("---|---|\n");
  // Epoch GEMM seconds per (model, threads): at the best rate, at chainerc's.
  struct Epoch {
    std::string model;
    int threads;
    double best_s = 0, chainerc_s = 0;
  };
  std::vector<Epoch> epochs;
  for (int t : threads)
    for (const Shape& s : shapes(with_f64)) {
      if (!with_shapes) break;
      const std::string label = s.model + " " + s.op;
      if (!only.empty() && label.find(only) == std::string::npos) continue;
      const Row row = s.f64 ? measure<double>(s, t, repeats, min_time)
                            : measure<float>(s, t, repeats, min_time);
      std::printf("| %s | %s | %s | %lldx%lldx%lld | %d |", s.model.c_str(), s.op.c_str(),
                  s.ta ? (s.tb ? "TT" : "TN") : (s.tb ? "NT" : "NN"), (long long)s.m,
                  (long long)s.n, (long long)s.k, t);
      double best = 0, chainerc = 0;
      for (const std::string& c : columns) {
        double rate = -1;  // the column's variants: "name" or "name|how"
        for (const Variant& x : row.variants)
          if (x.name == c || x.name.rfind(c + "|", 0) == 0) rate = std::max(rate, x.best);
        if (rate >= 0) {
          std::printf(" %.1f |", rate * 1e-9);
          best = std::max(best, rate);
        } else {
          std::printf(" - |");
        }
      }
      for (const Variant& x : row.variants)
        if (x.name == "chainerc") chainerc = x.best;
      std::printf(" %.1f (%s) | %.0f%% |\n", chainerc * 1e-9, row.chosen.c_str(),
                  100 * chainerc / best);
      std::fflush(stdout);
      if (s.calls_per_epoch > 0) {
        auto it = std::find_if(epochs.begin(), epochs.end(), [&](const Epoch& e) {
          return e.model == s.model && e.threads == t;
        });
        if (it == epochs.end()) it = epochs.insert(epochs.end(), Epoch{s.model, t});
        const double flop = 2.0 * double(s.m) * double(s.n) * double(s.k) * s.calls_per_epoch;
        it->best_s += flop / best;
        it->chainerc_s += flop / chainerc;
      }
    }
  if (!epochs.empty()) {
    std::printf(
        "\nOne epoch's GEMMs (600 steps of batch 100), seconds:\n\n| model | threads | at "
        "the best rate of each GEMM | at chainerc's |\n|---|---|---|---|\n");
    for (const Epoch& e : epochs)
      std::printf("| %s | %d | %.3f | %.3f |\n", e.model.c_str(), e.threads, e.best_s,
                  e.chainerc_s);
  }
  if (with_step) {
    std::printf(
        "\nThe training step's GEMM sequence (forward and backward in the step's order, operands "
        "wired as the step's, gW with beta 0 after zero_grads), ms per step, best of %d "
        "interleaved repeats; one epoch = 600 steps:\n\n| model | threads |",
        repeats);
    for (GemmLibrary lib : cpu::gemm_libraries(false))
      std::printf(" %s |", cpu::gemm_library_name(lib));
    std::printf(
        " chainerc (choice) | chainerc, gW beta 1 | best forced, s/epoch | each GEMM at its best "
        "library, s/epoch | chainerc, s/epoch | hot shapes at the best rates, s/epoch "
        "|\n|---|---|");
    for (size_t i = 0; i < cpu::gemm_libraries(false).size(); ++i) std::printf("---|");
    std::printf("---|---|---|---|---|---|\n");
    for (int t : threads)
      for (const auto& [model, hidden] :
           {std::pair<std::string, int64_t>{"mlp", 100}, {"mlp-large", 1000}}) {
        if (!only.empty() && (model + " step").find(only) == std::string::npos) continue;
        const auto ms = measure_step(hidden, t, repeats, min_time);
        std::printf("| %s | %d |", model.c_str(), t);
        double best = 1e30, mine = 0, mine_b1 = 0, each = 0;
        for (const auto& [name, v] : ms) {
          if (name == "chainerc") {
            mine = v;
          } else if (name == "chainerc beta 1") {
            mine_b1 = v;
          } else if (name == "each GEMM at its best") {
            each = v;
          } else {
            std::printf(" %.3f |", v);
            best = std::min(best, v);
          }
        }
        std::printf(" %.3f | %.3f | %.2f | %.2f | %.2f |", mine, mine_b1, best * 0.6, each * 0.6,
                    mine * 0.6);
        auto it = std::find_if(epochs.begin(), epochs.end(),
                               [&](const Epoch& e) { return e.model == model && e.threads == t; });
        if (it != epochs.end())
          std::printf(" %.2f |\n", it->best_s);
        else
          std::printf(" - |\n");
        std::fflush(stdout);
      }
  }
  std::printf("\n- chainerc BLAS: %s\n", cpu::blas_name());
  if (!private_cache.shared().empty())
    std::printf("- the choices: a copy of %s for this run (what it decided is not kept)\n",
                private_cache.shared().c_str());
  return 0;
}
