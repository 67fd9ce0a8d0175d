// The training step's GEMM sequence of an MLP 784-H-H-10 at batch 100, on
// operands wired as the step wires them: bench/gemm times it per library, and
// bench/step_profile --paired alternates it with the real step.

#ifndef CH_BENCH_STEP_SEQUENCE_H
#define CH_BENCH_STEP_SEQUENCE_H

#include <chrono>
#include <cstdint>
#include <random>
#include <vector>

#include "backend/cpu/gemm.h"

namespace bench {

namespace cpu = chainerc::cpu;

// The training step's GEMMs of an MLP 784-h-h-10 at batch 100 (see the file
// comment): operands wired as the step's, `lib` forced (-1: cpu::gemm).
struct StepSequence {
  using Clock = std::chrono::steady_clock;
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
  double flop() const {
    const double H = double(h);
    return 2.0 * 100 * (784 * H + H * H + H * 10) +                  // forward
           2.0 * 100 * (10 * H + 10 * H + H * H + H * H + H * 784);  // backward, no gx of l1
  }
  static constexpr int kGemms = 8;
  // With `seconds`, each GEMM's time is added to seconds[i] (i in the order
  // below). A forced library without a kernel for a GEMM's transposes
  // (libxsmm and a B^T without a workspace) leaves it to OpenBLAS.
  void run(int lib, float gw_beta, double* seconds = nullptr) {
    int index = 0;
    // The forward's products have their W's gradient as workspace (Linear's
    // after zero_grads).
    auto g = [&](bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float* a, const float* b,
                 float beta, float* c, std::vector<float>* gw = nullptr) {
      const int64_t lda = ta ? m : k, ldb = tb ? k : n;
      const cpu::GemmWorkspace ws =
          gw ? cpu::GemmWorkspace{gw->data(), gw->size() * sizeof(float)} : cpu::GemmWorkspace{};
      const auto t0 = seconds ? Clock::now() : Clock::time_point{};
      if (lib < 0)
        cpu::gemm(ta, tb, m, n, k, 1.f, a, lda, b, ldb, beta, c, n, ws);
      else
        cpu::gemm_using(
            cpu::gemm_library_supports(cpu::GemmLibrary(lib), false, ta, tb, gw != nullptr)
                ? cpu::GemmLibrary(lib)
                : cpu::GemmLibrary::openblas,
            ta, tb, m, n, k, 1.f, a, lda, b, ldb, beta, c, n, cpu::GemmBlocks::rule, ws);
      if (seconds) seconds[index++] += std::chrono::duration<double>(Clock::now() - t0).count();
    };
    g(false, true, 100, h, 784, x.data(), w1.data(), 0.f, h1.data(), &gw1);  // h1 = x W1^T
    g(false, true, 100, h, h, h1.data(), w2.data(), 0.f, h2.data(), &gw2);   // h2 = h1 W2^T
    g(false, true, 100, 10, h, h2.data(), w3.data(), 0.f, y.data(), &gw3);   // y = h2 W3^T
    g(true, false, 10, h, 100, gy.data(), h2.data(), gw_beta, gw3.data());   // gW3 = gy^T h2
    g(false, false, 100, h, 10, gy.data(), w3.data(), 0.f, gh2.data());      // gh2 = gy W3
    g(true, false, h, h, 100, gh2.data(), h1.data(), gw_beta, gw2.data());   // gW2 = gh2^T h1
    g(false, false, 100, h, h, gh2.data(), w2.data(), 0.f, gh1.data());      // gh1 = gh2 W2
    g(true, false, h, 784, 100, gh1.data(), x.data(), gw_beta, gw1.data());  // gW1 = gh1^T x
  }
};

}  // namespace bench

#endif  // CH_BENCH_STEP_SEQUENCE_H
