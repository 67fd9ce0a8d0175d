// The CPU GEMM (src/backend/cpu/gemm.cpp): every library against the
// textbook triple loop in long double (all four transposes, padded row
// strides, alpha and beta, empty and odd sizes, float32 and float64, one to
// three threads), the choice among the libraries driven by an injected
// stopwatch, the forced choice (force_gemm_library, CH_GEMM, the C API),
// ch_config_blas's text, and bad input. No test depends on real timings.
#include <ch/ch.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "backend/cpu/gemm.h"
#include "backend/cpu/parallel.h"
#include "core/error.h"
#include "thread_count.h"

using namespace chainerc;
using cpu::GemmLibrary;

namespace {

using test_util::ThreadCount;

// Puts the measured choice and the steady clock back after a test.
class CleanChoice {
 public:
  CleanChoice() { reset(); }
  ~CleanChoice() { reset(); }

 private:
  static void reset() {
    cpu::set_gemm_stopwatch_for_testing(nullptr);
    cpu::force_gemm_library("auto");
  }
};

struct Case {
  int64_t m, n, k;
};

template <typename T>
struct Problem {
  bool ta, tb;
  int64_t m, n, k, lda, ldb, ldc;
  T alpha, beta;
  std::vector<T> a, b, c;

  Problem(bool ta_, bool tb_, Case s, T alpha_, T beta_, int64_t pad, std::mt19937& rng)
      : ta(ta_), tb(tb_), m(s.m), n(s.n), k(s.k), alpha(alpha_), beta(beta_) {
    lda = std::max<int64_t>(1, ta ? m : k) + pad;
    ldb = std::max<int64_t>(1, tb ? k : n) + pad;
    ldc = std::max<int64_t>(1, n) + pad;
    std::uniform_real_distribution<double> u(-1, 1);
    a.resize(size_t((ta ? k : m) * lda + 1));
    b.resize(size_t((tb ? n : k) * ldb + 1));
    c.resize(size_t(m * ldc + 1));
    for (T& v : a) v = T(u(rng));
    for (T& v : b) v = T(u(rng));
    // With beta == 0, C is not read: NaNs in it must not show.
    for (T& v : c) v = beta == T(0) ? std::numeric_limits<T>::quiet_NaN() : T(u(rng));
  }

  // alpha op(A) op(B) + beta C, summed in long double.
  std::vector<long double> reference() const {
    std::vector<long double> out(c.size());
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        long double s = 0;
        for (int64_t p = 0; p < k; ++p)
          s += (long double)(ta ? a[p * lda + i] : a[i * lda + p]) *
               (long double)(tb ? b[j * ldb + p] : b[p * ldb + j]);
        out[i * ldc + j] = alpha * s + (beta == T(0) ? 0.0L : (long double)beta * c[i * ldc + j]);
      }
    return out;
  }

  void expect_matches(const std::vector<T>& got, const std::string& what) const {
    const std::vector<long double> want = reference();
    const double tol = std::is_same_v<T, float> ? 1e-5 : 1e-13;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < ldc; ++j) {
        const size_t at = size_t(i * ldc + j);
        if (j >= n) {  // the padding between rows is never written
          ASSERT_TRUE(got[at] == c[at] || (std::isnan(got[at]) && std::isnan(c[at])))
              << what << ": padding written at " << i << "," << j;
          continue;
        }
        ASSERT_NEAR(double(got[at]), double(want[at]),
                    tol * (k + 1) * (1 + std::fabs(double(want[at]))))
            << what << " at " << i << "," << j;
      }
    ASSERT_TRUE(got.back() == c.back() || (std::isnan(got.back()) && std::isnan(c.back())))
        << what << ": written past C";
  }
};

const Case kCases[] = {{0, 5, 3},       {5, 0, 3},      {4, 5, 0},    {1, 1, 1},
                       {1, 7, 3},       {7, 1, 5},      {3, 5, 1},    {17, 33, 65},
                       {100, 130, 300}, {333, 70, 129}, {31, 517, 40}};

template <typename T>
void check_every_library(bool f64) {
  std::mt19937 rng(42);
  std::vector<GemmLibrary> libs = cpu::gemm_candidates(f64);
  ASSERT_FALSE(libs.empty());
  for (int threads : {1, 2, 3}) {
    ThreadCount tc(threads);
    for (bool ta : {false, true})
      for (bool tb : {false, true})
        for (const Case& s : kCases)
          for (T beta : {T(0), T(0.5)}) {
            const int64_t pad = (s.m + s.n) % 2 ? 3 : 0;
            Problem<T> p(ta, tb, s, T(-1.5), beta, pad, rng);
            const std::string shape = std::string(ta ? "T" : "N") + (tb ? "T" : "N") + " " +
                                      std::to_string(s.m) + "x" + std::to_string(s.n) + "x" +
                                      std::to_string(s.k) + " beta " + std::to_string(beta) +
                                      " threads " + std::to_string(threads);
            for (GemmLibrary lib : libs) {
              std::vector<T> got = p.c;
              cpu::gemm_using(lib, ta, tb, p.m, p.n, p.k, p.alpha, p.a.data(), p.lda, p.b.data(),
                              p.ldb, p.beta, got.data(), p.ldc);
              p.expect_matches(got, std::string(cpu::gemm_library_name(lib)) + " " + shape);
              if (::testing::Test::HasFatalFailure()) return;
            }
            std::vector<T> got = p.c;
            cpu::gemm(ta, tb, p.m, p.n, p.k, p.alpha, p.a.data(), p.lda, p.b.data(), p.ldb, p.beta,
                      got.data(), p.ldc);
            p.expect_matches(got, "chosen " + shape);
            if (::testing::Test::HasFatalFailure()) return;
          }
  }
}

TEST(Gemm, EveryLibraryMatchesTheReferenceInFloat32) {
  CleanChoice clean;
  check_every_library<float>(false);
}

TEST(Gemm, EveryLibraryMatchesTheReferenceInFloat64) {
  CleanChoice clean;
  check_every_library<double>(true);
}

TEST(Gemm, TheCandidatesAreTheBuildsLibraries) {
  const std::vector<GemmLibrary> f32 = cpu::gemm_candidates(false),
                                 f64 = cpu::gemm_candidates(true);
  ASSERT_FALSE(f32.empty());
  EXPECT_EQ(f32[0], GemmLibrary::openblas);  // always linked
  EXPECT_EQ(f64[0], GemmLibrary::openblas);
  for (GemmLibrary lib : f64) EXPECT_NE(lib, GemmLibrary::onednn) << "oneDNN has no float64 GEMM";
#if CH_HAVE_DNNL
  EXPECT_TRUE(cpu::gemm_library_available(GemmLibrary::onednn, false));
#endif
  for (GemmLibrary lib : f32) EXPECT_FALSE(cpu::gemm_library_version(lib).empty());
  EXPECT_NE(cpu::gemm_library_version(GemmLibrary::openblas).find("OpenBLAS"), std::string::npos);
}

// A stopwatch that runs the call and reports the time each library is
// given for one flop (so rates differ per library, whatever the shape), and
// counts its uses.
struct FakeStopwatch {
  std::map<GemmLibrary, double> seconds_per_gflop;
  double split_factor = 1;      // time in blocks per thread / time in one block
  int64_t m = 0, n = 0, k = 0;  // the shape of the call being timed (set by the test)
  int uses = 0;
  cpu::GemmStopwatch get() {
    return [this](GemmLibrary lib, bool split, const std::function<void()>& call) {
      call();
      ++uses;
      const double s = seconds_per_gflop.at(lib) * 2e-9 * double(m) * double(n) * double(k);
      return split ? s * split_factor : s;
    };
  }
};

TEST(Gemm, EachShapeClassUsesTheCandidateMeasuredFastest) {
  CleanChoice clean;
  ThreadCount tc(1);
  const std::vector<GemmLibrary> libs = cpu::gemm_candidates(false);
  if (libs.size() < 2) GTEST_SKIP() << "one float32 GEMM library in this build: nothing to choose";
  FakeStopwatch fake;
  for (GemmLibrary lib : libs) fake.seconds_per_gflop[lib] = 1.0;
  fake.seconds_per_gflop[libs.back()] = 0.5;  // the last candidate is twice as fast
  cpu::set_gemm_stopwatch_for_testing(fake.get());
  std::vector<float> a(200 * 200, 1.f), b(200 * 200, 1.f), c(200 * 200);
  // Shapes in one class (m in (64, 128], n in (32, 64], k in (16, 32]) but
  // not equal: rates, not times, are compared.
  const Case in_class[] = {{100, 40, 20}, {70, 64, 32}, {128, 33, 17}};
  const size_t calls = cpu::kGemmSamples * libs.size();
  for (size_t i = 0; cpu::gemm_choice(false, false, true, 100, 40, 20) < 0; ++i) {
    ASSERT_LT(i, calls) << "not decided after every candidate's samples";
    const Case s = in_class[i % 3];
    fake.m = s.m, fake.n = s.n, fake.k = s.k;
    cpu::gemm(false, true, s.m, s.n, s.k, 1.f, a.data(), s.k, b.data(), s.k, 0.f, c.data(), s.n);
    ASSERT_EQ(c[0], float(s.k));
  }
  // Each candidate timed kGemmSamples times, or three times if it was
  // clearly slower (here: all but the last, at half its rate).
  EXPECT_EQ(fake.uses, int(3 * (libs.size() - 1) + cpu::kGemmSamples)) << calls;
  EXPECT_EQ(cpu::gemm_choice(false, false, true, 100, 40, 20), int(libs.back()));
  EXPECT_EQ(cpu::gemm_choice(false, false, true, 65, 33, 17), int(libs.back())) << "same class";
  // Decided: no more timing.
  const int uses = fake.uses;
  cpu::gemm(false, true, 100, 40, 20, 1.f, a.data(), 20, b.data(), 20, 0.f, c.data(), 40);
  EXPECT_EQ(fake.uses, uses);
  // Other classes are still open: the transposes, a size, the thread count.
  EXPECT_EQ(cpu::gemm_choice(false, false, false, 100, 40, 20), -1);
  EXPECT_EQ(cpu::gemm_choice(false, false, true, 129, 40, 20), -1);
  EXPECT_EQ(cpu::gemm_choice(true, false, true, 100, 40, 20), -1) << "float64 is its own class";
  {
    ThreadCount two(2);
    EXPECT_EQ(cpu::gemm_choice(false, false, true, 100, 40, 20), -1);
  }
  // The first candidate fastest in another class.
  fake.seconds_per_gflop[libs.front()] = 0.1;
  fake.m = 8, fake.n = 8, fake.k = 8;
  for (size_t i = 0; i < calls && cpu::gemm_choice(false, false, false, 8, 8, 8) < 0; ++i)
    cpu::gemm(false, false, 8, 8, 8, 1.f, a.data(), 8, b.data(), 8, 0.f, c.data(), 8);
  EXPECT_EQ(cpu::gemm_choice(false, false, false, 8, 8, 8), int(libs.front()));
  EXPECT_EQ(cpu::gemm_choice(false, false, true, 100, 40, 20), int(libs.back())) << "unchanged";

  // ch_config_blas names the candidates, the mode and the decided classes.
  const std::string text = ch_config_blas();
  EXPECT_EQ(text.rfind("GEMM auto (measured per shape class) | ", 0), 0u) << text;
  for (GemmLibrary lib : libs)
    EXPECT_NE(text.find(std::string(cpu::gemm_library_name(lib)) + ": "), std::string::npos)
        << text;
  EXPECT_NE(text.find("| one library thread per block of chainerc's 1-thread pool | chosen: "),
            std::string::npos)
      << text;
  const std::string rate = std::to_string(int(1 / 0.5)) + ".0 GFLOP/s";  // 2 GFLOP/s
  EXPECT_NE(text.find("float32 NT m<=128 n<=64 k<=32 1 thread: " +
                      std::string(cpu::gemm_library_name(libs.back())) + " " + rate + " (" +
                      cpu::gemm_library_name(libs.front()) + " 50%"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("float32 NN m<=8 n<=8 k<=8 1 thread: " +
                      std::string(cpu::gemm_library_name(libs.front())) + " 10.0 GFLOP/s"),
            std::string::npos)
      << text;
}

// With threads, a candidate is also whether C is split over them: tried both
// ways for mid-sized classes, only split for large ones, never for tiny ones.
TEST(Gemm, MidSizedClassesTrySplittingOverTheThreadsBothWays) {
  CleanChoice clean;
  ThreadCount tc(2);
  const std::vector<GemmLibrary> libs = cpu::gemm_candidates(false);
  FakeStopwatch fake;
  for (GemmLibrary lib : libs) fake.seconds_per_gflop[lib] = 1.0;
  cpu::set_gemm_stopwatch_for_testing(fake.get());
  std::vector<float> a(512 * 512, 1.f), b(512 * 512, 1.f), c(512 * 512);
  // Runs a class until it is decided; returns the timed calls it took.
  auto decide = [&](int64_t size) {
    const int before = fake.uses;
    fake.m = fake.n = fake.k = size;
    for (int i = 0; i < 100 && cpu::gemm_choice(false, false, false, size, size, size) < 0; ++i) {
      cpu::gemm(false, false, size, size, size, 1.f, a.data(), size, b.data(), size, 0.f, c.data(),
                size);
      EXPECT_EQ(c[0], float(size));
    }
    return fake.uses - before;
  };
  auto timed = [&](size_t candidates) {
    return candidates > 1 ? int(candidates) * cpu::kGemmSamples : 0;
  };
  const std::string first = cpu::gemm_library_name(libs.front());
  // 100^3 (class 128^3 = 2^21 multiply-adds): split and unsplit; split
  // twice as fast here.
  fake.split_factor = 0.5;
  // The unsplit candidates, at half the rate, are dropped after three calls.
  const int mixed = int(libs.size()) * (cpu::kGemmSamples + 3);
  EXPECT_EQ(decide(100), mixed);
  std::string text = ch_config_blas();
  EXPECT_NE(text.find("float32 NN m<=128 n<=128 k<=128 2 threads: " + first +
                      " split 2.0 GFLOP/s (" + first + " unsplit 50%"),
            std::string::npos)
      << text;
  // 60^3 (class 64^3): unsplit twice as fast.
  fake.split_factor = 2;
  EXPECT_EQ(decide(60), mixed);
  text = ch_config_blas();
  EXPECT_NE(text.find("float32 NN m<=64 n<=64 k<=64 2 threads: " + first +
                      " unsplit 1.0 GFLOP/s (" + first + " split 50%"),
            std::string::npos)
      << text;
  // 512^3: split only, whatever the stopwatch says; 16^3: unsplit only.
  EXPECT_EQ(decide(512), timed(libs.size()));
  EXPECT_EQ(decide(16), timed(libs.size()));
  text = ch_config_blas();
  EXPECT_NE(text.find("m<=512 n<=512 k<=512 2 threads: " + first + " split"), std::string::npos)
      << text;
  EXPECT_NE(text.find("m<=16 n<=16 k<=16 2 threads: " + first + " unsplit"), std::string::npos)
      << text;
}

// The call that decides a class measures into scratch memory; its own C
// comes from the chosen candidate, as every later call's does: the first
// step of a training loop and the next give the same bits (the measured
// choice must not make a process disagree with itself).
TEST(Gemm, EveryCallOfAClassGivesTheChosenLibrarysBits) {
  CleanChoice clean;
  ThreadCount tc(1);
  if (cpu::gemm_candidates(false).size() < 2) GTEST_SKIP() << "one float32 GEMM library";
  FakeStopwatch fake;
  const std::vector<GemmLibrary> libs = cpu::gemm_candidates(false);
  for (GemmLibrary lib : libs) fake.seconds_per_gflop[lib] = 1.0;
  fake.seconds_per_gflop[libs.back()] = 0.5;
  fake.m = 100, fake.n = 130, fake.k = 300;
  cpu::set_gemm_stopwatch_for_testing(fake.get());
  std::mt19937 rng(5);
  Problem<float> p(false, true, {100, 130, 300}, 1.f, 0.5f, 3, rng);
  ASSERT_EQ(cpu::gemm_choice(false, false, true, 100, 130, 300), -1);
  std::vector<float> first = p.c, second = p.c, want = p.c;
  cpu::gemm(false, true, 100, 130, 300, 1.f, p.a.data(), p.lda, p.b.data(), p.ldb, 0.5f,
            first.data(), p.ldc);
  ASSERT_EQ(cpu::gemm_choice(false, false, true, 100, 130, 300), int(libs.back()))
      << "decided by the first call";
  EXPECT_GT(fake.uses, 1) << "every candidate was timed";
  cpu::gemm(false, true, 100, 130, 300, 1.f, p.a.data(), p.lda, p.b.data(), p.ldb, 0.5f,
            second.data(), p.ldc);
  cpu::gemm_using(libs.back(), false, true, 100, 130, 300, 1.f, p.a.data(), p.lda, p.b.data(),
                  p.ldb, 0.5f, want.data(), p.ldc, cpu::GemmBlocks::one);
  for (size_t i = 0; i < want.size(); ++i) {
    ASSERT_EQ(first[i], want[i]) << i;
    ASSERT_EQ(second[i], want[i]) << i;
  }
}

// Noisy timings must still end in a choice: the first candidate leads (10
// GFLOP/s), the others are dropped against it, then its later calls fall to
// 0.1. Judged against a dropped candidate's frozen median every candidate
// would be out and the deciding call would measure forever; the lead is
// taken among the candidates still in, so the first one is chosen.
TEST(Gemm, NoisyTimingsStillEndInAChoice) {
  CleanChoice clean;
  ThreadCount tc(1);
  const std::vector<GemmLibrary> libs = cpu::gemm_candidates(false);
  if (libs.size() < 2) GTEST_SKIP() << "one float32 GEMM library";
  const int64_t m = 40, n = 40, k = 40;
  const double flop = 2.0 * m * n * k;
  std::map<GemmLibrary, std::vector<double>> gflops;  // per library, call by call
  gflops[libs[0]] = {10, 0.1, 10, 0.1, 0.1};
  for (size_t i = 1; i < libs.size(); ++i) gflops[libs[i]] = {1, 1, 1, 1, 1};
  std::map<GemmLibrary, size_t> calls;
  int uses = 0;
  cpu::set_gemm_stopwatch_for_testing(
      [&](GemmLibrary lib, bool, const std::function<void()>& call) {
        call();
        ++uses;
        const std::vector<double>& r = gflops.at(lib);
        const double rate = r[std::min(calls[lib]++, r.size() - 1)];
        return flop / (rate * 1e9);
      });
  std::vector<float> a(m * k, 1.f), b(k * n, 1.f), c(m * n);
  cpu::gemm(false, false, m, n, k, 1.f, a.data(), k, b.data(), n, 0.f, c.data(), n);
  EXPECT_EQ(c[0], float(k));
  EXPECT_EQ(cpu::gemm_choice(false, false, false, m, n, k), int(libs[0]));
  EXPECT_LE(uses, int(cpu::kGemmSamples * libs.size()));
}

TEST(Gemm, AForcedLibraryIsUsedWithoutMeasuring) {
  CleanChoice clean;
  FakeStopwatch fake;
  for (GemmLibrary lib : cpu::gemm_candidates(false)) fake.seconds_per_gflop[lib] = 1;
  cpu::set_gemm_stopwatch_for_testing(fake.get());
  std::mt19937 rng(3);
  Problem<float> p(false, true, {100, 130, 300}, 1.f, 0.f, 0, rng);
  for (GemmLibrary lib : cpu::gemm_candidates(false)) {
    cpu::force_gemm_library(cpu::gemm_library_name(lib));
    EXPECT_EQ(cpu::forced_gemm_library(), cpu::gemm_library_name(lib));
    EXPECT_EQ(cpu::gemm_choice(false, false, true, 100, 130, 300), int(lib));
    // Bit for bit what that library gives.
    std::vector<float> got = p.c, want = p.c;
    cpu::gemm(false, true, 100, 130, 300, 1.f, p.a.data(), 300, p.b.data(), 300, 0.f, got.data(),
              130);
    cpu::gemm_using(lib, false, true, 100, 130, 300, 1.f, p.a.data(), 300, p.b.data(), 300, 0.f,
                    want.data(), 130);
    for (size_t i = 0; i + 1 < got.size(); ++i) ASSERT_EQ(got[i], want[i]) << i;
    EXPECT_NE(std::string(ch_config_blas())
                  .rfind(std::string("GEMM ") + cpu::gemm_library_name(lib) + " | ", 0),
              std::string::npos);
  }
  EXPECT_EQ(fake.uses, 0);
#if CH_HAVE_DNNL
  // oneDNN has no float64 GEMM: float64 stays measured.
  cpu::force_gemm_library("onednn");
  EXPECT_EQ(cpu::gemm_choice(false, false, false, 10, 10, 10), int(GemmLibrary::onednn));
  EXPECT_EQ(cpu::gemm_choice(true, false, false, 10, 10, 10), -1);
#endif
  cpu::force_gemm_library("auto");
  EXPECT_EQ(cpu::forced_gemm_library(), "auto");
  EXPECT_EQ(cpu::gemm_choice(false, false, true, 100, 130, 300), -1) << "choices forgotten";
  // Unknown names: an error naming the value and the candidates; unchanged.
  cpu::force_gemm_library("openblas");
  try {
    cpu::force_gemm_library("mkl");
    FAIL() << "no error for mkl";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), CH_ERR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(e.what()).find("\"mkl\""), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("auto, openblas"), std::string::npos) << e.what();
  }
  EXPECT_EQ(cpu::forced_gemm_library(), "openblas");
}

TEST(Gemm, TheCApiSetsAndReportsTheLibrary) {
  CleanChoice clean;
  EXPECT_STREQ(ch_config_gemm(), "auto");
  ASSERT_EQ(ch_config_set_gemm("openblas"), CH_OK);
  EXPECT_STREQ(ch_config_gemm(), "openblas");
  EXPECT_EQ(ch_config_set_gemm("cublas"), CH_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(ch_error_message()).find("cublas"), std::string::npos);
  EXPECT_STREQ(ch_config_gemm(), "openblas");
  ASSERT_EQ(ch_config_set_gemm(nullptr), CH_OK);
  EXPECT_STREQ(ch_config_gemm(), "auto");
  ASSERT_EQ(ch_config_set_gemm(""), CH_OK);
  EXPECT_STREQ(ch_config_gemm(), "auto");
}

class Environment {
 public:
  explicit Environment(const char* value) {
    setenv("CH_GEMM", value, 1);
    cpu::reread_gemm_environment_for_testing();
  }
  ~Environment() {
    unsetenv("CH_GEMM");
    cpu::reread_gemm_environment_for_testing();
  }
};

TEST(Gemm, TheEnvironmentVariableForcesTheLibrary) {
  CleanChoice clean;
  std::vector<float> a(4, 1.f), b(4, 1.f), c(4);
  {
    Environment env("openblas");
    EXPECT_EQ(cpu::forced_gemm_library(), "openblas");
    EXPECT_STREQ(ch_config_gemm(), "openblas");
    EXPECT_EQ(cpu::gemm_choice(false, false, false, 2, 2, 2), int(GemmLibrary::openblas));
    // ch_config_set_gemm overrides it.
    ASSERT_EQ(ch_config_set_gemm("auto"), CH_OK);
    EXPECT_EQ(cpu::gemm_choice(false, false, false, 2, 2, 2), -1);
  }
  {
    Environment env("fastest-please");
    try {
      cpu::gemm(false, false, 2, 2, 2, 1.f, a.data(), 2, b.data(), 2, 0.f, c.data(), 2);
      FAIL() << "a GEMM ran with CH_GEMM=fastest-please";
    } catch (const Error& e) {
      EXPECT_EQ(e.status(), CH_ERR_INVALID_ARGUMENT);
      EXPECT_NE(std::string(e.what()).find("CH_GEMM=fastest-please"), std::string::npos)
          << e.what();
    }
    EXPECT_STREQ(ch_config_gemm(), "auto");
    EXPECT_NE(std::string(ch_config_blas()).find("CH_GEMM=fastest-please"), std::string::npos);
  }
  cpu::gemm(false, false, 2, 2, 2, 1.f, a.data(), 2, b.data(), 2, 0.f, c.data(), 2);
  EXPECT_EQ(c[3], 2.f);
}

TEST(Gemm, BadShapesAreStatusesNamingTheValues) {
  CleanChoice clean;
  std::vector<float> a(64, 1.f), b(64, 1.f), c(64);
  auto expect_error = [&](const std::function<void()>& call, const std::string& needle) {
    try {
      call();
      FAIL() << "no error; expected " << needle;
    } catch (const Error& e) {
      EXPECT_EQ(e.status(), CH_ERR_SHAPE);
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  for (GemmLibrary lib : cpu::gemm_candidates(false)) {
    auto with = [&](bool ta, bool tb, int64_t m, int64_t n, int64_t k, int64_t lda, int64_t ldb,
                    int64_t ldc) {
      return [=, &a, &b, &c] {
        cpu::gemm_using(lib, ta, tb, m, n, k, 1.f, a.data(), lda, b.data(), ldb, 0.f, c.data(),
                        ldc);
      };
    };
    expect_error(with(false, false, 4, 4, 4, 3, 4, 4), "lda = 3");
    expect_error(with(true, false, 4, 5, 3, 3, 5, 5), "lda = 3");  // A is k x m: rows of m = 4
    expect_error(with(false, true, 4, 4, 4, 4, 2, 4), "ldb = 2");
    expect_error(with(false, false, 4, 5, 4, 4, 5, 4), "ldc = 4");
    expect_error(with(false, false, 2, 2, int64_t{1} << 33, 2, 2, 2), "k = 8589934592");
    expect_error(with(false, false, -1, 2, 2, 2, 2, 2), "m = -1");
  }
  expect_error(
      [&] { cpu::gemm(false, false, 4, 4, 4, 1.f, a.data(), 3, b.data(), 4, 0.f, c.data(), 4); },
      "lda = 3");
}

}  // namespace
