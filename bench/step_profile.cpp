// One training step of bench/train's models (bench/chainerc_net.h) over the
// internal C++ API, for profilers: valgrind refuses the address range the C
// API's handle table reserves, so this driver builds the same nets from src/
// directly, and releases each intermediate variable the way a C handle's
// release does (variable_handle_destroyed), so that the step does the work
// bench/train's does.
//
//   step_profile [mlp|convnet] [threads] [steps] [--hidden N] [--gemm|--ops|--in-step|--paired]
//
// Prints the mean microseconds per step after one warm-up step (the data is
// synthetic: a fixed pattern, labels i % 10), the time in each phase and the
// last loss; with --gemm (last) only the MLP step's GEMMs, timed alone; with
// --ops each function's forward and backward alone; with --in-step also each
// GEMM of the step timed where the step calls it (cpu::set_gemm_observer),
// and each phase's time outside the GEMMs; with --paired (MLP only) the step
// against its GEMM limit, measured in alternation (paired_with_limit below).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "backend/cpu/gemm.h"
#include "backend/cpu/parallel.h"
#include "bench_util.h"
#include "core/allocator.h"
#include "core/random.h"
#include "core/variable.h"
#include "ops/ops.h"
#include "step_sequence.h"
#include "train/function_set.h"
#include "train/optimizer.h"
#include "train/optimizers/optimizers.h"

using namespace chainerc;

namespace {

constexpr int64_t kBatch = 100;

// The step's GEMMs as the observer saw them: seconds per call by shape, and
// seconds per phase of the step (the phase the step is in when a GEMM runs).
// The convnet's convolutions call gemm from the pool's threads at once, each
// call's seconds its own: the sums are what the step's threads spent in GEMMs.
struct GemmTally {
  std::atomic<int> phase{0};
  std::mutex mutex;
  double phase_seconds[4] = {};
  std::map<std::tuple<bool, bool, int64_t, int64_t, int64_t, bool>, std::vector<double>> calls;

  static void observe(const cpu::GemmCall& c, double seconds, void* user) {
    auto& tally = *static_cast<GemmTally*>(user);
    std::lock_guard<std::mutex> lock(tally.mutex);
    tally.phase_seconds[tally.phase.load()] += seconds;
    tally.calls[{c.trans_a, c.trans_b, c.m, c.n, c.k, c.b_workspace}].push_back(seconds);
  }
  void clear() {
    std::lock_guard<std::mutex> lock(mutex);
    for (double& s : phase_seconds) s = 0;
    calls.clear();
  }
};

struct Net {
  bool conv;
  std::vector<FuncPtr> layers;
  OptimizerPtr opt;

  Net(bool convnet, int64_t hidden) : conv(convnet) {
    if (conv) {
      layers.push_back(
          ops::convolution_2d_new(1, 20, 5, 5, 1, 1, 0, 0, DType::Float32, 1, 0, false, 0, 0));
      layers.push_back(
          ops::convolution_2d_new(20, 50, 5, 5, 1, 1, 0, 0, DType::Float32, 1, 0, false, 0, 0));
      layers.push_back(ops::linear_new(800, 500, DType::Float32, 1, 0, false, 0, 0));
      layers.push_back(ops::linear_new(500, 10, DType::Float32, 1, 0, false, 0, 0));
    } else {
      layers.push_back(ops::linear_new(784, hidden, DType::Float32, 1, 0, false, 0, 0));
      layers.push_back(ops::linear_new(hidden, hidden, DType::Float32, 1, 0, false, 0, 0));
      layers.push_back(ops::linear_new(hidden, 10, DType::Float32, 1, 0, false, 0, 0));
    }
    std::vector<NamedParameter> params;
    for (size_t i = 0; i < layers.size(); ++i)
      for (const Parameter& p : *layers[i]->parameters)
        params.push_back(NamedParameter{"l" + std::to_string(i) + "/" + p.name, p.param, p.grad});
    opt = make_sgd(0.01, "step_profile");
    opt->setup(std::move(params), "step_profile");
    if (bench::sgd_in_backward()) opt->set_step_in_backward(true, "step_profile");
  }

  // What releasing the last C handle of an intermediate variable does.
  static void drop(VarPtr& v) {
    std::shared_ptr<void> h = std::move(v);
    variable_handle_destroyed(h);
  }

  using Clock = std::chrono::steady_clock;
  Clock::duration phase[4] = {};  // forward, zero_grads, backward, update
  GemmTally* tally = nullptr;     // with --in-step: told which phase runs
  void enter(int p) {
    if (tally) tally->phase = p;
  }

  // zero_grads first, as bench/train and the examples (Linear's forward then
  // has W's gradient as a workspace); its time still counts as phase 1.
  double step(const VarPtr& x, const VarPtr& t) {
    enter(1);
    const auto z0 = Clock::now();
    opt->zero_grads();
    const auto z1 = Clock::now();
    enter(0);
    const auto t0 = Clock::now();
    VarPtr h = x;
    auto advance = [&](VarPtr next) {
      if (h != x) drop(h);
      h = std::move(next);
    };
    auto apply = [](const FuncPtr& f, const VarPtr& in) { return apply1(f->clone(), {in}); };
    if (conv) {
      advance(apply(layers[0], h));
      advance(ops::max_pooling_2d(h, 2, 2, 2, 2, 0, 0, true));
      advance(apply(layers[1], h));
      advance(ops::max_pooling_2d(h, 2, 2, 2, 2, 0, 0, true));
      advance(apply(layers[2], h));
      advance(ops::relu(h));
      advance(apply(layers[3], h));
    } else {
      for (size_t i = 0; i < layers.size(); ++i) {
        advance(apply(layers[i], h));
        if (i + 1 < layers.size()) advance(ops::relu(h));
      }
    }
    VarPtr loss = ops::softmax_cross_entropy(h, t);
    advance(nullptr);
    const auto t1 = Clock::now();
    enter(2);
    backward(loss, false);
    const auto t2 = Clock::now();
    enter(3);
    opt->update("step_profile");
    const auto t3 = Clock::now();
    phase[0] += t1 - t0;
    phase[1] += z1 - z0;
    phase[2] += t2 - t1;
    phase[3] += t3 - t2;
    return loss->data.get(0);
  }
};

// The GEMMs of one MLP step (784-H-H-10, batch 100) alone, as Linear calls
// them after zero_grads (gW written with beta 0: the gradients are zeroed
// lazily), each on operands of its own: microseconds per step spent in GEMM
// at the current thread count. bench/gemm's step sequence wires the operands
// as the step does and compares the libraries.
double mlp_gemm_us(int64_t hidden, long steps) {
  const auto gs = bench::StepSequence::gemms(hidden);
  std::vector<std::vector<float>> a, b, c;
  for (const auto& g : gs) {
    a.emplace_back(static_cast<size_t>(g.m * g.k), 0.5f);
    b.emplace_back(static_cast<size_t>(g.k * g.n), 0.25f);
    c.emplace_back(static_cast<size_t>(g.m * g.n), 0.0f);
  }
  auto once = [&] {
    for (size_t i = 0; i < gs.size(); ++i) {
      const auto& g = gs[i];
      cpu::gemm(g.ta, g.tb, g.m, g.n, g.k, 1.0f, a[i].data(), g.ta ? g.m : g.k, b[i].data(),
                g.tb ? g.k : g.n, 0.0f, c[i].data(), g.n);
    }
  };
  once();
  const auto t0 = std::chrono::steady_clock::now();
  for (long s = 0; s < steps; ++s) once();
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() /
         static_cast<double>(steps);
}

// Each function of the net's step alone (forward, then backward with a
// gradient of ones), `steps` times each: microseconds per call.
void per_function(Net& net, const VarPtr& x, const VarPtr& t, long steps) {
  std::vector<VarPtr> vars{x};
  std::vector<std::string> names;
  auto add = [&](VarPtr y) { vars.push_back(std::move(y)); };
  auto apply = [](const FuncPtr& f, const VarPtr& in) { return apply1(f->clone(), {in}); };
  if (net.conv) {
    add(apply(net.layers[0], vars.back()));
    add(ops::max_pooling_2d(vars.back(), 2, 2, 2, 2, 0, 0, true));
    add(apply(net.layers[1], vars.back()));
    add(ops::max_pooling_2d(vars.back(), 2, 2, 2, 2, 0, 0, true));
    add(apply(net.layers[2], vars.back()));
    add(ops::relu(vars.back()));
    add(apply(net.layers[3], vars.back()));
  } else {
    for (size_t i = 0; i < net.layers.size(); ++i) {
      add(apply(net.layers[i], vars.back()));
      if (i + 1 < net.layers.size()) add(ops::relu(vars.back()));
    }
  }
  add(ops::softmax_cross_entropy(vars.back(), t));
  using Clock = std::chrono::steady_clock;
  auto us = [&](Clock::time_point t0) {
    return std::chrono::duration<double, std::micro>(Clock::now() - t0).count() /
           static_cast<double>(steps);
  };
  for (size_t i = 1; i < vars.size(); ++i) {
    const FuncPtr& f = vars[i]->creator;
    Arrays in;
    for (const VarPtr& v : f->inputs) in.push_back(v->data);
    f->input_grad_mask = i == 1 ? 0 : ~uint64_t{0};
    Arrays gys{Array::full(vars[i]->data.dtype(), vars[i]->data.shape(), 1.0)};
    auto t0 = Clock::now();
    for (long s = 0; s < steps; ++s) {
      FuncPtr g = f->clone();
      if (!g) g = f;  // built-ins without clone: forward again on the node
      g->forward(in);
    }
    const double fwd = us(t0);
    t0 = Clock::now();
    for (long s = 0; s < steps; ++s) f->backward(in, gys);
    std::printf("  %-22s forward %8.1f us  backward %8.1f us\n", f->name(), fwd, us(t0));
  }
}

// The step against the time its GEMMs allow, measured in alternation: rounds
// of 10 real steps, each followed by 10 runs of bench/gemm's step sequence
// (step_sequence.h) with each library forced and with chainerc's choice. The
// limit is bench/gemm's: the lower of the best forced library's sequence and
// the sum, GEMM by GEMM, of the fastest library's time inside its own forced
// sequence. On a shared machine the rate a library reaches moves from second
// to second; bench/gemm's limit is the best of a few 20 ms windows, taken
// apart from the epoch it is compared with. Here both sides are means over
// the same minutes, so a slow spell falls on both alike. Each side's timed
// stretch follows one untimed step (or sequence) of its own: the sequences
// fill the caches with their operands, and the round's first real step then
// read the model from memory (on an AVX-512 Xeon VM, 2026-11-29, one thread,
// that alone put the step 10-20% over the limit where warm rounds were 1-3%
// over); an epoch's steps follow one another.
void paired_with_limit(int64_t hidden, int threads, long steps, const std::function<void()>& step) {
  constexpr long kRound = 10;
  const long rounds = std::max(1L, steps / kRound);
  bench::StepSequence seq(hidden);
  struct V {
    std::string name;
    int lib;            // -1: chainerc's choice
    float gw_beta = 0;  // 1: gW added onto, as SGD's deferred product adds onto W
    double total = 0, gemm[bench::StepSequence::kGemms] = {};
  };
  std::vector<V> vs;
  for (cpu::GemmLibrary lib : cpu::gemm_libraries(false))
    vs.push_back({cpu::gemm_library_name(lib), int(lib)});
  const size_t choice_at = vs.size();
  vs.push_back({"chainerc's choice", -1});
  vs.push_back({"chainerc's, gW beta 1", -1, 1.f});
  for (V& v : vs)
    for (int i = 0; i < 4 * cpu::kGemmSamples; ++i) seq.run(v.lib, v.gw_beta);  // choices made here
  using Clock = std::chrono::steady_clock;
  auto seconds_since = [](Clock::time_point t0) {
    return std::chrono::duration<double>(Clock::now() - t0).count();
  };
  double real_total = 0;
  std::vector<double> ratios, real_rounds;
  // Per variant, per round: the sequence's time and each GEMM's (the medians).
  std::vector<std::vector<double>> round_totals(vs.size());
  std::vector<std::vector<std::vector<double>>> round_gemms(vs.size());
  GemmTally tally;  // the real step's GEMMs, timed where it calls them
  for (long r = 0; r < rounds; ++r) {
    step();  // untimed: the sequences left the caches to their own operands
    cpu::set_gemm_observer(&GemmTally::observe, &tally);
    auto t0 = Clock::now();
    for (long s = 0; s < kRound; ++s) step();
    const double real = seconds_since(t0);
    cpu::set_gemm_observer(nullptr, nullptr);
    real_total += real;
    real_rounds.push_back(real);
    double best_forced = 1e30, gemm_best[bench::StepSequence::kGemms];
    std::fill(std::begin(gemm_best), std::end(gemm_best), 1e30);
    for (size_t vi = 0; vi < vs.size(); ++vi) {
      V& v = vs[vi];
      double gemm[bench::StepSequence::kGemms] = {};
      seq.run(v.lib, v.gw_beta);  // untimed, as the real step's first
      t0 = Clock::now();
      for (long s = 0; s < kRound; ++s) seq.run(v.lib, v.gw_beta, gemm);
      const double total = seconds_since(t0);
      v.total += total;
      round_totals[vi].push_back(total);
      round_gemms[vi].emplace_back(std::begin(gemm), std::end(gemm));
      for (int j = 0; j < bench::StepSequence::kGemms; ++j) v.gemm[j] += gemm[j];
      if (v.lib < 0) continue;
      best_forced = std::min(best_forced, total);
      for (int j = 0; j < bench::StepSequence::kGemms; ++j)
        gemm_best[j] = std::min(gemm_best[j], gemm[j]);
    }
    double each_best = 0;
    for (double g : gemm_best) each_best += g;
    ratios.push_back(real / std::min(best_forced, each_best));
  }
  const double n = double(rounds * kRound);
  double best_forced = 1e30, each_best = 0;
  std::string best_name;
  for (const V& v : vs)
    if (v.lib >= 0 && v.total < best_forced) best_forced = v.total, best_name = v.name;
  double gemm_best[bench::StepSequence::kGemms];  // the fastest forced library's, per GEMM
  for (int j = 0; j < bench::StepSequence::kGemms; ++j) {
    gemm_best[j] = 1e30;
    for (const V& v : vs)
      if (v.lib >= 0) gemm_best[j] = std::min(gemm_best[j], v.gemm[j]);
    each_best += gemm_best[j];
  }
  const double limit = std::min(best_forced, each_best);
  std::sort(ratios.begin(), ratios.end());
  // The same with each mean over the rounds replaced by the median over the
  // rounds, on both sides: a spell of the VM in a few rounds moves it less.
  auto median = [](std::vector<double> x) {
    std::sort(x.begin(), x.end());
    return x.size() % 2 ? x[x.size() / 2] : (x[x.size() / 2 - 1] + x[x.size() / 2]) / 2;
  };
  double median_forced = 1e30, median_each_best = 0;
  for (size_t vi = 0; vi < vs.size(); ++vi)
    if (vs[vi].lib >= 0) median_forced = std::min(median_forced, median(round_totals[vi]));
  for (int j = 0; j < bench::StepSequence::kGemms; ++j) {
    double best = 1e30;
    for (size_t vi = 0; vi < vs.size(); ++vi) {
      if (vs[vi].lib < 0) continue;
      std::vector<double> per_round;
      for (const auto& g : round_gemms[vi]) per_round.push_back(g[size_t(j)]);
      best = std::min(best, median(per_round));
    }
    median_each_best += best;
  }
  const double median_ratio = median(real_rounds) / std::min(median_forced, median_each_best);
  std::printf(
      "mlp 784-%ld-%ld-10 threads=%d, %ld rounds of %ld real steps, each followed by %ld of "
      "the GEMM sequence per variant (ms per step, mean over the rounds):\n",
      long(hidden), long(hidden), threads, rounds, kRound, kRound);
  const double real_gemms = tally.phase_seconds[0];
  std::printf("  real step                      %8.3f  (%.2f s per 600-step epoch)\n",
              real_total / n * 1e3, real_total / n * 600);
  std::printf("    its GEMMs                    %8.3f\n", real_gemms / n * 1e3);
  std::printf("    the rest                     %8.3f\n", (real_total - real_gemms) / n * 1e3);
  for (const V& v : vs) std::printf("  sequence, %-20s %8.3f\n", v.name.c_str(), v.total / n * 1e3);
  std::printf("  sequence, each GEMM at its best %7.3f\n", each_best / n * 1e3);
  // GEMM by GEMM: in the real step, in chainerc's choice's sequence, and the
  // best library's in its own sequence.
  const auto shapes = bench::StepSequence::gemms(hidden);
  std::printf(
      "  GEMM by GEMM, us per step (real step / chainerc's choice's sequence, gW beta 0 and 1 / "
      "best):\n");
  const V& choice = vs[choice_at];
  const V& choice_beta1 = vs[choice_at + 1];
  for (int j = 0; j < bench::StepSequence::kGemms; ++j) {
    const auto& g = shapes[size_t(j)];
    double in_step = 0;
    const auto it = tally.calls.find({g.ta, g.tb, g.m, g.n, g.k, g.workspace});
    if (it != tally.calls.end())
      for (double sec : it->second) in_step += sec;
    std::printf("    %c%c%s %5ld x %5ld x %5ld  %8.1f  %8.1f  %8.1f  %8.1f\n", g.ta ? 'T' : 'N',
                g.tb ? 'T' : 'N', g.workspace ? "+ws" : "   ", long(g.m), long(g.n), long(g.k),
                in_step / n * 1e6, choice.gemm[j] / n * 1e6, choice_beta1.gemm[j] / n * 1e6,
                gemm_best[j] / n * 1e6);
  }
  std::printf("  limit (lower of %s and each GEMM at its best) %.3f ms (%.2f s per epoch)\n",
              best_name.c_str(), limit / n * 1e3, limit / n * 600);
  std::printf(
      "  the step over the limit: %.3f over all rounds; per round median %.3f, quartiles "
      "%.3f-%.3f, range %.3f-%.3f\n",
      real_total / limit, ratios[ratios.size() / 2], ratios[ratios.size() / 4],
      ratios[ratios.size() * 3 / 4], ratios.front(), ratios.back());
  std::printf("  the step over the limit, medians over the rounds for the means: %.3f\n",
              median_ratio);
}

}  // namespace

int main(int argc, char** argv) {
  std::string model = argc > 1 ? argv[1] : "mlp";
  int threads = argc > 2 ? std::atoi(argv[2]) : 1;
  long steps = argc > 3 ? std::atol(argv[3]) : 100;
  int64_t hidden = 100;
  for (int i = 4; i + 1 < argc; i += 2)
    if (!std::strcmp(argv[i], "--hidden")) hidden = std::atoll(argv[i + 1]);
  if ((model != "mlp" && model != "convnet") || threads < 1 || steps < 1) {
    std::fprintf(stderr,
                 "usage: step_profile [mlp|convnet] [threads] [steps] [--hidden N] "
                 "[--gemm|--ops|--in-step|--paired]\n");
    return 2;
  }
  const bool conv = model == "convnet";
  cpu::set_num_threads(threads);
  if (argc > 4 && !std::strcmp(argv[argc - 1], "--gemm")) {
    std::printf("mlp GEMMs alone, threads=%d: %.1f us/step\n", threads, mlp_gemm_us(hidden, steps));
    return 0;
  }
  random::seed(1);
  Net net(conv, hidden);

  Shape xs = conv ? Shape{kBatch, 1, 28, 28} : Shape{kBatch, 784};
  Array xa = Array::empty(DType::Float32, xs);
  Array ta = Array::empty(DType::Int32, Shape{kBatch});
  for (int64_t i = 0; i < xa.size(); ++i)
    xa.data<float>()[i] = static_cast<float>((i * 7919) % 256) / 255.0f;
  for (int64_t i = 0; i < kBatch; ++i) ta.data<int32_t>()[i] = static_cast<int32_t>(i % 10);

  auto make_vars = [&](VarPtr& x, VarPtr& t) {
    x = std::make_shared<VariableImpl>(xa);
    t = std::make_shared<VariableImpl>(ta);
    x->requires_grad = false;
    t->requires_grad = false;
  };
  VarPtr x, t;
  make_vars(x, t);
  if (argc > 4 && !std::strcmp(argv[argc - 1], "--ops")) {
    std::printf("%s, threads=%d, each function alone:\n", model.c_str(), threads);
    per_function(net, x, t, steps);
    return 0;
  }
  if (argc > 4 && !std::strcmp(argv[argc - 1], "--paired")) {
    if (conv) {
      std::fprintf(stderr, "step_profile: --paired is for the MLP\n");
      return 2;
    }
    net.step(x, t);  // warm-up
    paired_with_limit(hidden, threads, steps, [&] {
      make_vars(x, t);
      net.step(x, t);
    });
    return 0;
  }
  const bool in_step = argc > 4 && !std::strcmp(argv[argc - 1], "--in-step");
  GemmTally tally;
  if (in_step) {
    net.tally = &tally;
    cpu::set_gemm_observer(&GemmTally::observe, &tally);
  }
  double loss = net.step(x, t);  // warm-up
  for (auto& p : net.phase) p = {};
  tally.clear();
  const ch_memory_stats m0 = host_memory_stats();
  const auto t0 = std::chrono::steady_clock::now();
  for (long s = 0; s < steps; ++s) {
    make_vars(x, t);
    loss = net.step(x, t);
  }
  const double us =
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
  std::printf("%s threads=%d steps=%ld: %.1f us/step, loss %.6f\n", model.c_str(), threads, steps,
              us / static_cast<double>(steps), loss);
  const ch_memory_stats m1 = host_memory_stats();
  std::printf("  host allocations %.1f per step (%lld reached the system), peak in use %.1f MiB\n",
              static_cast<double>(m1.allocations - m0.allocations) / static_cast<double>(steps),
              static_cast<long long>(m1.cache_misses - m0.cache_misses),
              static_cast<double>(m1.peak_bytes_in_use) / (1024.0 * 1024.0));
  const char* names[4] = {"forward", "zero_grads", "backward", "update"};
  const double per_step = 1e6 / static_cast<double>(steps);
  for (int i = 0; i < 4; ++i) {
    const double phase_us = std::chrono::duration<double>(net.phase[i]).count() * per_step;
    std::printf("  %-10s %8.1f us/step", names[i], phase_us);
    if (in_step)
      std::printf(" (GEMMs %.1f, the rest %.1f)", tally.phase_seconds[i] * per_step,
                  phase_us - tally.phase_seconds[i] * per_step);
    std::printf("\n");
  }
  if (in_step) {
    cpu::set_gemm_observer(nullptr, nullptr);
    std::printf(
        "  the step's GEMMs where it calls them (m x n x k, row-major; +ws: with a workspace for B "
        "transposed):\n");
    double sum_us = 0;
    for (auto& [shape, seconds] : tally.calls) {
      const auto& [ta, tb, m, n, k, ws] = shape;
      std::sort(seconds.begin(), seconds.end());
      const double median = seconds[seconds.size() / 2];
      double total = 0;
      for (double s1 : seconds) total += s1;
      sum_us += total * per_step;
      std::printf(
          "    %c%c%s %5ld x %5ld x %5ld  %6.1f calls/step  median %8.1f us  %6.1f GFLOP/s\n",
          ta ? 'T' : 'N', tb ? 'T' : 'N', ws ? "+ws" : "   ", static_cast<long>(m),
          static_cast<long>(n), static_cast<long>(k),
          static_cast<double>(seconds.size()) / double(steps), median * 1e6,
          2.0 * double(m) * double(n) * double(k) / median * 1e-9);
    }
    std::printf("  GEMMs %.1f us/step, the rest of the step %.1f us/step\n", sum_us,
                us / static_cast<double>(steps) - sum_us);
  }
  return 0;
}
