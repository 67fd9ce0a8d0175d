// The training step's GEMM sequence of an MLP 784-H-H-10 at batch 100, on
// operands wired as the step wires them: bench/gemm times it per library, and
// bench/step_profile --paired alternates it with the real step.

#ifndef CH_BENCH_STEP_SEQUENCE_H
#define CH_BENCH_STEP_SEQUENCE_H

#include <array>
#include <chrono>
#include <cstdint>
#include <random>
#include <vector>

#include "backend/cpu/gemm.h"

namespace bench {

namespace cpu = chainerc::cpu;

// A vector as a product's workspace (a gradient lent by Linear's forward).
template <typename T>
cpu::GemmWorkspace workspace_of(std::vector<T>& v) {
  return {v.data(), v.size() * sizeof(T)};
}

// The training step's GEMMs of an MLP 784-h-h-10 at batch 100 (see the file
// comment): operands wired as the step's, `lib` forced (-1: cpu::gemm).
struct StepSequence {
  using Clock = std::chrono::steady_clock;
  static constexpr int kGemms = 8;

  // One GEMM of the step (row-major, op(A) m x k). `workspace`: the forward's
  // products have their W's gradient as workspace (Linear's after
  // zero_grads); `weight_grad`: gW = gy^T x, written at run()'s gw_beta.
  struct Gemm {
    bool ta, tb;
    int64_t m, n, k;
    bool workspace, weight_grad;
  };
  // The step's GEMMs in the order forward and backward run them.
  static std::array<Gemm, kGemms> gemms(int64_t h) {
    return {{{false, true, 100, h, 784, true, false},    // h1 = x W1^T
             {false, true, 100, h, h, true, false},      // h2 = h1 W2^T
             {false, true, 100, 10, h, true, false},     // y = h2 W3^T
             {true, false, 10, h, 100, false, true},     // gW3 = gy^T h2
             {false, false, 100, h, 10, false, false},   // gh2 = gy W3
             {true, false, h, h, 100, false, true},      // gW2 = gh2^T h1
             {false, false, 100, h, h, false, false},    // gh1 = gh2 W2
             {true, false, h, 784, 100, false, true}}};  // gW1 = gh1^T x
  }

  int64_t h;
  std::vector<float> x, w1, w2, w3, h1, h2, y, gy, gw1, gw2, gw3, gh1, gh2;
  explicit StepSequence(int64_t hidden) : h(hidden) {
    std::mt19937 rng(2);
    std::uniform_real_distribution<float> u(-1, 1);
    auto filled = [&](std::vector<float>& v, int64_t n) {
      v.resize(size_t(n));
      for (float& e : v) e = u(rng);
    };
    filled(x, 100 * 784);
    filled(w1, h * 784);
    filled(w2, h * h);
    filled(w3, 10 * h);
    filled(gy, 100 * 10);
    for (auto* v : {&h1, &h2, &gh1, &gh2}) v->assign(size_t(100 * h), 0.f);
    y.assign(100 * 10, 0.f);
    gw1.assign(size_t(h * 784), 0.f);
    gw2.assign(size_t(h * h), 0.f);
    gw3.assign(size_t(10 * h), 0.f);
  }
  // With `seconds`, each GEMM's time is added to seconds[i] (i in gemms()'s
  // order). A forced library without a kernel for a GEMM's transposes
  // (libxsmm and a B^T without a workspace) leaves it to OpenBLAS.
  void run(int lib, float gw_beta, double* seconds = nullptr) {
    struct Operands {
      const float* a;
      const float* b;
      float* c;
      std::vector<float>* lent;  // the workspace, where the GEMM has one
    };
    const Operands operands[kGemms] = {
        {x.data(), w1.data(), h1.data(), &gw1},       {h1.data(), w2.data(), h2.data(), &gw2},
        {h2.data(), w3.data(), y.data(), &gw3},       {gy.data(), h2.data(), gw3.data(), nullptr},
        {gy.data(), w3.data(), gh2.data(), nullptr},  {gh2.data(), h1.data(), gw2.data(), nullptr},
        {gh2.data(), w2.data(), gh1.data(), nullptr}, {gh1.data(), x.data(), gw1.data(), nullptr}};
    const std::array<Gemm, kGemms> shapes = gemms(h);
    for (int i = 0; i < kGemms; ++i) {
      const Gemm& g = shapes[size_t(i)];
      const Operands& o = operands[i];
      const int64_t lda = g.ta ? g.m : g.k, ldb = g.tb ? g.k : g.n;
      const float beta = g.weight_grad ? gw_beta : 0.f;
      const cpu::GemmWorkspace ws = g.workspace ? workspace_of(*o.lent) : cpu::GemmWorkspace{};
      const auto t0 = seconds ? Clock::now() : Clock::time_point{};
      if (lib < 0)
        cpu::gemm(g.ta, g.tb, g.m, g.n, g.k, 1.f, o.a, lda, o.b, ldb, beta, o.c, g.n, ws);
      else
        cpu::gemm_using(
            cpu::gemm_library_supports(cpu::GemmLibrary(lib), false, g.ta, g.tb, g.workspace)
                ? cpu::GemmLibrary(lib)
                : cpu::GemmLibrary::openblas,
            g.ta, g.tb, g.m, g.n, g.k, 1.f, o.a, lda, o.b, ldb, beta, o.c, g.n,
            cpu::GemmBlocks::rule, ws);
      if (seconds) seconds[i] += std::chrono::duration<double>(Clock::now() - t0).count();
    }
  }
};

}  // namespace bench

#endif  // CH_BENCH_STEP_SEQUENCE_H
