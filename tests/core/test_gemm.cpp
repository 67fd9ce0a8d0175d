// The CPU GEMM (src/backend/cpu/gemm.cpp): every library against the
// textbook triple loop in long double (all four transposes, padded row
// strides, alpha and beta, empty and odd sizes, float32 and float64, one to
// three threads), the choice among the libraries driven by an injected
// stopwatch, the disk cache of the choices (in temporary folders, never the
// real ~/.cache), the forced choice (force_gemm_library, CH_GEMM, the C API),
// ch_config_blas's text, and bad input. No test depends on real timings.
#include <ch/ch.h>
#include <dirent.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "backend/cpu/gemm.h"
#include "backend/cpu/gemm_cache.h"
#include "backend/cpu/gemm_libxsmm.h"
#include "backend/cpu/gemm_onednn_matmul.h"
#include "backend/cpu/parallel.h"
#include "core/error.h"
#include "thread_count.h"

using namespace chainerc;
using cpu::GemmLibrary;

namespace {

using test_util::ThreadCount;

// Puts the measured choice and the steady clock back after a test, with the
// disk cache off (the cache's own tests turn it on in a temporary folder:
// no test writes to the real ~/.cache).
class CleanChoice {
 public:
  CleanChoice() { reset(); }
  ~CleanChoice() { reset(); }

 private:
  static void reset() {
    cpu::set_gemm_stopwatch_for_testing(nullptr);
    cpu::set_gemm_context_warmup_for_testing(-1);
    cpu::force_gemm_library("auto");
    cpu::set_gemm_machine_for_testing("");
    cpu::set_gemm_cache_directory("");
  }
};

// Timed calls per candidate the sampling rule gives (gemm.h): at least
// kGemmSamples, more until kGemmSampleSeconds in all, at most kGemmMaxSamples,
// for candidates still in that take `seconds` per call.
int samples_for(double seconds) {
  int n = cpu::kGemmSamples;
  double total = n * seconds;
  while (n < cpu::kGemmMaxSamples && total < cpu::kGemmSampleSeconds) {
    ++n;
    total += seconds;
  }
  return n;
}

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
  std::vector<GemmLibrary> libs = cpu::gemm_libraries(f64);
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
              if (!cpu::gemm_library_supports(lib, f64, ta, tb)) continue;  // libxsmm: no B^T
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

// With more than one thread C is cut into one block per thread; the cuts sit
// on multiples of 16 nearest to even shares (100 columns over two threads:
// 48 + 52; rounding up gave 64 + 36 and left one thread 64% of the work).
TEST(Gemm, BlockEdgesAreAlignedAndNearestToEvenShares) {
  auto edges = [](int64_t extent, int64_t parts) {
    std::vector<int64_t> e;
    for (int64_t p = 0; p <= parts; ++p) e.push_back(cpu::gemm_block_edge(extent, parts, p));
    return e;
  };
  EXPECT_EQ(edges(100, 2), (std::vector<int64_t>{0, 48, 100}));
  EXPECT_EQ(edges(100, 3), (std::vector<int64_t>{0, 32, 64, 100}));
  EXPECT_EQ(edges(1000, 2), (std::vector<int64_t>{0, 496, 1000}));
  EXPECT_EQ(edges(784, 2), (std::vector<int64_t>{0, 400, 784}));  // a tie: up
  EXPECT_EQ(edges(17, 2), (std::vector<int64_t>{0, 16, 17}));
  const int64_t align = cpu::kGemmBlockAlign;
  for (int64_t extent = 1; extent <= 2100; ++extent)
    for (int64_t parts = 1; parts <= std::min<int64_t>(8, (extent + align - 1) / align); ++parts) {
      const std::vector<int64_t> e = edges(extent, parts);
      ASSERT_EQ(e.front(), 0);
      ASSERT_EQ(e.back(), extent);
      for (int64_t p = 1; p < parts; ++p) {
        const double share = double(extent) * double(p) / double(parts);
        ASSERT_EQ(e[p] % align, 0) << extent << " over " << parts << ", edge " << p;
        ASSERT_LE(std::fabs(double(e[p]) - share), align / 2.0)
            << extent << " over " << parts << ", edge " << p;
        // A block is empty only where there are fewer 16s than threads
        // (33 columns over three: 16 + 0 + 17); the pool skips it.
        if (extent >= parts * align)
          ASSERT_GT(e[p], e[p - 1]) << extent << " over " << parts << ": empty block " << p - 1;
        else
          ASSERT_GE(e[p], e[p - 1]) << extent << " over " << parts;
      }
    }
}

// The blocks together compute all of C and nothing past it, for every library,
// transpose, and cut (rows of a tall C, columns of a wide one) at two and three
// threads, on extents that do not divide into 16s.
TEST(Gemm, CallsCutIntoOneBlockPerThreadMatchTheReference) {
  CleanChoice clean;
  std::mt19937 rng(7);
  const Case cases[] = {{20, 100, 37}, {7, 1000, 9}, {100, 20, 33}, {49, 3, 5}, {5, 33, 64}};
  for (int threads : {2, 3}) {
    ThreadCount tc(threads);
    for (bool ta : {false, true})
      for (bool tb : {false, true})
        for (const Case& s : cases)
          for (float beta : {0.f, 0.5f}) {
            Problem<float> p(ta, tb, s, -1.5f, beta, 3, rng);
            for (GemmLibrary lib : cpu::gemm_libraries(false)) {
              if (!cpu::gemm_library_supports(lib, false, ta, tb)) continue;
              std::vector<float> got = p.c;
              cpu::gemm_using(lib, ta, tb, p.m, p.n, p.k, p.alpha, p.a.data(), p.lda, p.b.data(),
                              p.ldb, p.beta, got.data(), p.ldc, cpu::GemmBlocks::per_thread);
              p.expect_matches(got, std::string(cpu::gemm_library_name(lib)) + (ta ? " T" : " N") +
                                        (tb ? "T " : "N ") + std::to_string(s.m) + "x" +
                                        std::to_string(s.n) + "x" + std::to_string(s.k) +
                                        " threads " + std::to_string(threads));
              if (::testing::Test::HasFatalFailure()) return;
            }
          }
  }
}

// bench/step_profile's GEMMs in the step: the observer sees each gemm() call
// with its shape and its time, on the calling thread, and nothing once unset.
TEST(Gemm, TheObserverSeesEveryCallWithItsShapeUntilUnset) {
  CleanChoice clean;
  ThreadCount tc(2);
  struct Seen {
    std::mutex mutex;
    std::vector<std::pair<cpu::GemmCall, double>> calls;
  } seen;
  auto observe = [](const cpu::GemmCall& c, double seconds, void* user) {
    auto& s = *static_cast<Seen*>(user);
    std::lock_guard<std::mutex> lock(s.mutex);
    s.calls.emplace_back(c, seconds);
  };
  std::mt19937 rng(3);
  Problem<float> pf(true, false, {20, 30, 40}, 1.f, 0.f, 0, rng);
  Problem<double> pd(false, true, {3, 4, 5}, 1.0, 0.0, 0, rng);
  cpu::set_gemm_observer(observe, &seen);
  std::vector<float> cf = pf.c;
  cpu::gemm(true, false, 20, 30, 40, 1.f, pf.a.data(), pf.lda, pf.b.data(), pf.ldb, 0.f, cf.data(),
            pf.ldc);
  std::vector<double> cd = pd.c;
  cpu::gemm(false, true, 3, 4, 5, 1.0, pd.a.data(), pd.lda, pd.b.data(), pd.ldb, 0.0, cd.data(),
            pd.ldc);
  cpu::set_gemm_observer(nullptr, nullptr);
  cpu::gemm(true, false, 20, 30, 40, 1.f, pf.a.data(), pf.lda, pf.b.data(), pf.ldb, 0.f, cf.data(),
            pf.ldc);
  pf.expect_matches(cf, "observed float32");
  pd.expect_matches(cd, "observed float64");
  ASSERT_EQ(seen.calls.size(), 2u);
  const cpu::GemmCall& a = seen.calls[0].first;
  EXPECT_TRUE(!a.f64 && a.trans_a && !a.trans_b && a.m == 20 && a.n == 30 && a.k == 40);
  const cpu::GemmCall& b = seen.calls[1].first;
  EXPECT_TRUE(b.f64 && !b.trans_a && b.trans_b && b.m == 3 && b.n == 4 && b.k == 5);
  for (const auto& c : seen.calls) {
    EXPECT_GT(c.second, 0.0);
    EXPECT_LT(c.second, 60.0);
  }
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

// Auto mode measures every library of the build but a BLIS on its reference
// kernels, which can still be forced and computes as the others do.
TEST(Gemm, AutoMeasuresEveryLibraryButBlisOnItsReferenceKernels) {
  for (bool f64 : {false, true}) {
    const std::vector<GemmLibrary> all = cpu::gemm_libraries(f64),
                                   measured = cpu::gemm_candidates(f64);
    for (GemmLibrary lib : all) {
      const std::string version = cpu::gemm_library_version(lib);
      const bool reference =
          lib == GemmLibrary::blis && version.find("(generic kernels") != std::string::npos;
      const bool in = std::find(measured.begin(), measured.end(), lib) != measured.end();
      EXPECT_EQ(in, !reference) << version;
      EXPECT_EQ(cpu::gemm_library_not_measured(lib).empty(), !reference) << version;
    }
    for (GemmLibrary lib : measured) EXPECT_NE(std::find(all.begin(), all.end(), lib), all.end());
  }
  if (!cpu::gemm_library_available(GemmLibrary::blis, false) ||
      cpu::gemm_library_not_measured(GemmLibrary::blis).empty())
    return;
  // Here BLIS runs its reference kernels: ch_config_blas says it is not
  // measured, and forced it computes the product.
  CleanChoice clean;
  EXPECT_NE(std::string(ch_config_blas()).find("(not measured: reference kernels)"),
            std::string::npos)
      << ch_config_blas();
  ASSERT_EQ(ch_config_set_gemm("blis"), CH_OK);
  std::vector<float> a(6, 1.f), b(6, 2.f), c(4, -1.f);
  cpu::gemm(false, false, 2, 2, 3, 1.f, a.data(), 3, b.data(), 2, 0.f, c.data(), 2);
  for (float v : c) EXPECT_EQ(v, 6.f);
  EXPECT_EQ(cpu::gemm_choice(false, false, false, 2, 2, 3), int(GemmLibrary::blis));
  ASSERT_EQ(ch_config_set_gemm("auto"), CH_OK);
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

// The float32 libraries that take a transposed B (the candidates of an NT
// class: libxsmm is not one).
std::vector<GemmLibrary> nt_candidates() {
  std::vector<GemmLibrary> out;
  for (GemmLibrary lib : cpu::gemm_candidates(false))
    if (cpu::gemm_library_supports(lib, false, false, true)) out.push_back(lib);
  return out;
}

TEST(Gemm, EachShapeClassUsesTheCandidateMeasuredFastest) {
  CleanChoice clean;
  ThreadCount tc(1);
  const std::vector<GemmLibrary> libs = nt_candidates();
  if (libs.size() < 2) GTEST_SKIP() << "one float32 GEMM library in this build: nothing to choose";
  FakeStopwatch fake;
  for (GemmLibrary lib : cpu::gemm_candidates(false)) fake.seconds_per_gflop[lib] = 1.0;
  fake.seconds_per_gflop[libs.back()] = 0.5;  // the last candidate is twice as fast
  cpu::set_gemm_stopwatch_for_testing(fake.get());
  std::vector<float> a(200 * 200, 1.f), b(200 * 200, 1.f), c(200 * 200);
  // Shapes in one class (m in (64, 128], n in (32, 64], k in (16, 32]) but
  // not equal: rates, not times, are compared.
  const Case in_class[] = {{100, 40, 20}, {70, 64, 32}, {128, 33, 17}};
  const size_t calls = cpu::kGemmMaxSamples * libs.size();
  for (size_t i = 0; cpu::gemm_choice(false, false, true, 100, 40, 20) < 0; ++i) {
    ASSERT_LT(i, calls) << "not decided after every candidate's samples";
    const Case s = in_class[i % 3];
    fake.m = s.m, fake.n = s.n, fake.k = s.k;
    cpu::gemm(false, true, s.m, s.n, s.k, 1.f, a.data(), s.k, b.data(), s.k, 0.f, c.data(), s.n);
    ASSERT_EQ(c[0], float(s.k));
  }
  // The candidates take turns; after three calls each, all but the last
  // (at half its rate) are clearly slower and dropped, and with one
  // candidate left the class is decided.
  EXPECT_EQ(fake.uses, int(3 * libs.size())) << calls;
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
// A GEMM called from inside a parallel_for (as the convolution calls one per
// part of the batch) runs on its one thread: it is decided in the one-thread
// class, with no split candidates, and leaves the two-thread class of
// top-level calls open.
TEST(Gemm, CallsInsideAParallelForAreOneThreadCalls) {
  CleanChoice clean;
  ThreadCount tc(2);
  // Called from both threads at once: only atomics, and OpenBLAS the fastest.
  std::atomic<int> split_timed{0};
  cpu::set_gemm_stopwatch_for_testing(
      [&](GemmLibrary lib, bool split, const std::function<void()>& call) {
        call();
        if (split) ++split_timed;
        return lib == GemmLibrary::openblas ? 1e-4 : 2e-4;
      });
  std::vector<float> a(64 * 64, 1.f), b(64 * 64, 1.f), c0(64 * 64), c1(64 * 64);
  for (int round = 0; round < cpu::kGemmMaxSamples * 2 * cpu::kGemmLibraries; ++round) {
    cpu::parallel_for(2, 1, [&](int64_t begin, int64_t) {
      std::vector<float>& c = begin == 0 ? c0 : c1;
      cpu::gemm(false, false, 64, 64, 64, 1.f, a.data(), 64, b.data(), 64, 0.f, c.data(), 64);
    });
    ThreadCount one(1);
    if (cpu::gemm_choice(false, false, false, 64, 64, 64) >= 0) break;
  }
  EXPECT_EQ(c0[0], 64.f);
  EXPECT_EQ(c1[64 * 64 - 1], 64.f);
  EXPECT_EQ(split_timed.load(), 0) << "a split candidate was timed inside a parallel_for";
  {
    ThreadCount one(1);
    EXPECT_EQ(cpu::gemm_choice(false, false, false, 64, 64, 64), int(GemmLibrary::openblas))
        << "one-thread class decided";
  }
  EXPECT_EQ(cpu::gemm_choice(false, false, false, 64, 64, 64), -1) << "two-thread class open";
}

TEST(Gemm, MidSizedClassesTrySplittingOverTheThreadsBothWays) {
  CleanChoice clean;
  cpu::set_gemm_context_warmup_for_testing(0);  // counted calls; the warm-up: below
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
  // Seconds per call of a size^3 product through any library in one block.
  auto seconds = [](int64_t size) { return 2e-9 * double(size) * double(size) * double(size); };
  auto timed = [&](size_t candidates, double seconds_per_call) {
    return candidates > 1 ? int(candidates) * samples_for(seconds_per_call) : 0;
  };
  const std::string first = cpu::gemm_library_name(libs.front());
  // 100^3 (class 128^3 = 2^21 multiply-adds): split and unsplit; split
  // twice as fast here.
  fake.split_factor = 0.5;
  // The unsplit candidates, at half the rate, are dropped after three calls;
  // the split ones go on.
  EXPECT_EQ(decide(100), int(libs.size()) * (samples_for(seconds(100) * 0.5) + 3));
  std::string text = ch_config_blas();
  EXPECT_NE(text.find("float32 NN m<=128 n<=128 k<=128 2 threads: " + first +
                      " split 2.0 GFLOP/s (" + first + " unsplit 50%"),
            std::string::npos)
      << text;
  // 60^3 (class 64^3): unsplit twice as fast.
  fake.split_factor = 2;
  EXPECT_EQ(decide(60), int(libs.size()) * (samples_for(seconds(60)) + 3));
  text = ch_config_blas();
  EXPECT_NE(text.find("float32 NN m<=64 n<=64 k<=64 2 threads: " + first +
                      " unsplit 1.0 GFLOP/s (" + first + " split 50%"),
            std::string::npos)
      << text;
  // 512^3: split only, whatever the stopwatch says; 16^3: unsplit only.
  // 512^3 (2^27 multiply-adds) is also judged in context, each candidate on
  // kGemmContextSamples later calls (equal rates: every one is close).
  EXPECT_EQ(decide(512), timed(libs.size(), seconds(512) * 2) +
                             (libs.size() > 1 ? int(libs.size()) * cpu::kGemmContextSamples : 0));
  EXPECT_EQ(decide(16), timed(libs.size(), seconds(16)));
  text = ch_config_blas();
  EXPECT_NE(text.find("m<=512 n<=512 k<=512 2 threads: " + first + " split"), std::string::npos)
      << text;
  EXPECT_NE(text.find("m<=16 n<=16 k<=16 2 threads: " + first + " unsplit"), std::string::npos)
      << text;
}

// With more than one thread a timed call finds C as the pool's threads left
// it (zeros written in shares of its rows), not as the candidate's untimed
// call before it did: in a program another function wrote C last. Only C's
// own elements are written (a sub-matrix's row padding keeps its values), and
// the call's result is the chosen candidate's, at beta 0 and beta 1.
TEST(Gemm, TimedCallsAtTwoThreadsFindCWrittenByThePool) {
  CleanChoice clean;
  ThreadCount tc(2);
  FakeStopwatch fake;
  for (GemmLibrary lib : cpu::gemm_candidates(false)) fake.seconds_per_gflop[lib] = 1.0;
  const int64_t m = 40, n = 24, k = 8, ldc = 30;  // C: 40 rows of 24 in rows of 30
  fake.m = m, fake.n = n, fake.k = k;
  std::vector<float> a(size_t(m * k)), b(size_t(k * n)), c(size_t(m * ldc));
  for (size_t i = 0; i < a.size(); ++i) a[i] = float(i % 7) - 3.f;
  for (size_t i = 0; i < b.size(); ++i) b[i] = float(i % 5) - 2.f;
  auto reference = [&](int64_t i, int64_t j) {
    float s = 0;
    for (int64_t p = 0; p < k; ++p) s += a[size_t(i * k + p)] * b[size_t(p * n + j)];
    return s;
  };
  const cpu::GemmStopwatch inner = fake.get();
  int timed_calls = 0, found_zeros = 0, found_padding = 0;
  for (float beta : {0.f, 1.f}) {
    SCOPED_TRACE(beta);
    // What the caller's C holds when each timed call starts (setting the
    // stopwatch clears the choices: the class is measured again).
    cpu::set_gemm_stopwatch_for_testing(
        [&](GemmLibrary lib, bool split, const std::function<void()>& call) {
          ++timed_calls;
          bool zeros = true, padding = true;
          for (int64_t i = 0; i < m; ++i)
            for (int64_t j = 0; j < ldc; ++j) {
              const float v = c[size_t(i * ldc + j)];
              if (j < n)
                zeros = zeros && v == 0.f;
              else
                padding = padding && v == -7.f;
            }
          found_zeros += zeros;
          found_padding += padding;
          return inner(lib, split, call);
        });
    timed_calls = found_zeros = found_padding = 0;
    std::fill(c.begin(), c.end(), -7.f);
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) c[size_t(i * ldc + j)] = 0.5f;
    cpu::gemm(false, false, m, n, k, 1.f, a.data(), k, b.data(), n, beta, c.data(), ldc);
    ASSERT_GT(timed_calls, 0) << "the first call of the class measures";
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < ldc; ++j) {
        const float want = j < n ? reference(i, j) + beta * 0.5f : -7.f;
        ASSERT_EQ(c[size_t(i * ldc + j)], want) << i << ", " << j;
      }
    if (beta == 0.f) {
      // The caller's C is the scratch: each timed call found its elements
      // zeroed (the untimed call before it had written the product) and its
      // padding as it was.
      EXPECT_EQ(found_zeros, timed_calls);
      EXPECT_EQ(found_padding, timed_calls);
    } else {
      // A scratch C of its own: the caller's C is untouched until the chosen
      // candidate computes it.
      EXPECT_EQ(found_zeros, 0);
      EXPECT_EQ(found_padding, timed_calls);
    }
  }
}

// The call that decides a class measures into scratch memory; its own C
// comes from the chosen candidate, as every later call's does: the first
// step of a training loop and the next give the same bits (the measured
// choice must not make a process disagree with itself).
TEST(Gemm, EveryCallOfAClassGivesTheChosenLibrarysBits) {
  CleanChoice clean;
  ThreadCount tc(1);
  if (nt_candidates().size() < 2) GTEST_SKIP() << "one float32 GEMM library";
  FakeStopwatch fake;
  const std::vector<GemmLibrary> libs = nt_candidates();
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
  EXPECT_EQ(uses, int(3 * libs.size())) << "the others dropped after three calls each";
}

// oneDNN (JIT code, buffers and primitives: more memory in the process), its
// sgemm and its matmul primitive alike, is chosen only where it beats the
// best other library by more than 15% in classes below 2^27 multiply-adds.
TEST(Gemm, OneDnnMustBeatTheOthersByFifteenPercentInSmallClasses) {
  CleanChoice clean;
  ThreadCount tc(1);
  if (!cpu::gemm_library_available(GemmLibrary::onednn, false)) GTEST_SKIP() << "no oneDNN";
  FakeStopwatch fake;
  for (GemmLibrary lib : cpu::gemm_candidates(false)) fake.seconds_per_gflop[lib] = 1.0;
  fake.seconds_per_gflop[GemmLibrary::openblas] = 0.98;  // the best of the others
  std::vector<float> a(512 * 512, 1.f), b(512 * 512, 1.f), c(512 * 512);
  auto decide_with = [&](double onednn_speedup, int64_t size) {
    fake.seconds_per_gflop[GemmLibrary::onednn] = 0.98 / onednn_speedup;
    cpu::set_gemm_stopwatch_for_testing(fake.get());
    fake.m = fake.n = fake.k = size;
    for (int i = 0; i < 400 && cpu::gemm_choice(false, false, false, size, size, size) < 0; ++i)
      cpu::gemm(false, false, size, size, size, 1.f, a.data(), size, b.data(), size, 0.f, c.data(),
                size);
    return cpu::gemm_choice(false, false, false, size, size, size);
  };
  EXPECT_EQ(decide_with(1.12, 32), int(GemmLibrary::openblas));
  EXPECT_EQ(decide_with(1.18, 64), int(GemmLibrary::onednn));
  // From 2^27 multiply-adds a class takes oneDNN on any lead.
  EXPECT_EQ(decide_with(1.02, 512), int(GemmLibrary::onednn));
  EXPECT_EQ(decide_with(1.12, 256), int(GemmLibrary::openblas));  // 2^24: the margin holds
  // The same for its matmul primitive (a primitive and a scratchpad per
  // shape).
  if (!cpu::gemm_library_available(GemmLibrary::onednn_matmul, false)) return;
  fake.seconds_per_gflop[GemmLibrary::onednn] = 1.0;
  auto matmul_with = [&](double speedup, int64_t size) {
    fake.seconds_per_gflop[GemmLibrary::onednn_matmul] = 0.98 / speedup;
    return decide_with(1.0 / 0.98, size);  // oneDNN's sgemm at 1.0 again
  };
  EXPECT_EQ(matmul_with(1.12, 128), int(GemmLibrary::openblas));  // classes not decided above
  EXPECT_EQ(matmul_with(1.18, 16), int(GemmLibrary::onednn_matmul));
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
    // (A forced libxsmm leaves this product, B transposed, to OpenBLAS.)
    std::vector<float> got = p.c, want = p.c;
    cpu::gemm(false, true, 100, 130, 300, 1.f, p.a.data(), 300, p.b.data(), 300, 0.f, got.data(),
              130);
    cpu::gemm_using(
        cpu::gemm_library_supports(lib, false, false, true) ? lib : GemmLibrary::openblas, false,
        true, 100, 130, 300, 1.f, p.a.data(), 300, p.b.data(), 300, 0.f, want.data(), 130);
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

// libxsmm's generated kernels: only alpha 1 with beta 0 or 1 and B as stored
// run on them (the reference test above, at alpha -1.5, sees OpenBLAS's
// fallback), so these products are checked here, every shape of kCases with
// odd strides, both transposes of A, one to three threads.
template <typename T>
void check_libxsmm_kernels() {
  std::mt19937 rng(7);
  const int before = cpu::libxsmm::kernels_held();
  for (int threads : {1, 2, 3}) {
    ThreadCount tc(threads);
    for (bool ta : {false, true})
      for (const Case& s : kCases)
        for (T beta : {T(0), T(1)}) {
          Problem<T> p(ta, false, s, T(1), beta, (s.m + s.k) % 2 ? 5 : 0, rng);
          std::vector<T> got = p.c;
          cpu::gemm_using(GemmLibrary::libxsmm, ta, false, p.m, p.n, p.k, p.alpha, p.a.data(),
                          p.lda, p.b.data(), p.ldb, p.beta, got.data(), p.ldc);
          p.expect_matches(got, std::string("libxsmm ") + (ta ? "TN " : "NN ") +
                                    std::to_string(s.m) + "x" + std::to_string(s.n) + "x" +
                                    std::to_string(s.k) + " beta " + std::to_string(beta) +
                                    " threads " + std::to_string(threads));
          if (::testing::Test::HasFatalFailure()) return;
        }
  }
  // New kernels, unless a run before in this process (--gtest_repeat) made them.
  static bool first_run = true;
  if (first_run) {
    EXPECT_GT(cpu::libxsmm::kernels_held(), before) << "no kernel was generated";
  }
  first_run = false;
}

TEST(Gemm, LibxsmmKernelsMatchTheReference) {
  if (!cpu::gemm_library_available(GemmLibrary::libxsmm, false))
    GTEST_SKIP() << "libxsmm is not built in or not usable on this CPU";
  CleanChoice clean;
  check_libxsmm_kernels<float>();
  check_libxsmm_kernels<double>();
  EXPECT_NE(cpu::gemm_library_version(GemmLibrary::libxsmm).find("libxsmm 1."), std::string::npos);
  EXPECT_NE(std::string(ch_config_blas()).find("libxsmm: libxsmm"), std::string::npos);
}

// oneDNN's matmul makes one primitive per shape (transposes, sizes, strides,
// alpha, beta) and keeps it: the same product again makes none, another
// alpha or beta does, and every one matches the reference, from any thread.
TEST(Gemm, OneDnnMatmulKeepsOnePrimitivePerShape) {
  if (!cpu::gemm_library_available(GemmLibrary::onednn_matmul, false))
    GTEST_SKIP() << "oneDNN is not built in";
  CleanChoice clean;
  ThreadCount tc(1);
  std::mt19937 rng(9);
  EXPECT_NE(cpu::gemm_library_version(GemmLibrary::onednn_matmul).find(" matmul ("),
            std::string::npos);
  auto through_matmul = [](const Problem<float>& p) {
    std::vector<float> got = p.c;
    cpu::gemm_using(GemmLibrary::onednn_matmul, p.ta, p.tb, p.m, p.n, p.k, p.alpha, p.a.data(),
                    p.lda, p.b.data(), p.ldb, p.beta, got.data(), p.ldc, cpu::GemmBlocks::one);
    return got;
  };
  auto run = [&](const Problem<float>& p) { p.expect_matches(through_matmul(p), "onednn-matmul"); };
  Problem<float> nt(false, true, {37, 29, 113}, 1.f, 0.f, 3, rng);
  Problem<float> scaled(false, true, {37, 29, 113}, -1.5f, 0.5f, 3, rng);
  const int before = cpu::onednn_matmul::primitives_held();
  run(nt);
  const int one = cpu::onednn_matmul::primitives_held();
  run(nt);
  EXPECT_EQ(cpu::onednn_matmul::primitives_held(), one) << "the same shape: no new primitive";
  run(scaled);
  if (before + 2 <= cpu::onednn_matmul::kMaxPrimitives) {
    EXPECT_LE(one, before + 1);
    EXPECT_EQ(cpu::onednn_matmul::primitives_held(), one + 1) << "another alpha and beta";
  } else {  // earlier tests' shapes filled it: these went to oneDNN's sgemm, still right
    EXPECT_EQ(cpu::onednn_matmul::primitives_held(), cpu::onednn_matmul::kMaxPrimitives);
  }
  // Four threads at once on the same primitive, each with its own C: the bits
  // of the call on this thread alone.
  const std::vector<float> want = through_matmul(scaled);
  std::vector<std::thread> threads;
  std::atomic<int> wrong{0};
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 20; ++i) {
        const std::vector<float> got = through_matmul(scaled);
        if (std::memcmp(got.data(), want.data(), got.size() * sizeof(float)) != 0) ++wrong;
      }
    });
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(wrong.load(), 0) << "concurrent calls of one primitive gave different bits";
  EXPECT_NE(std::string(ch_config_blas()).find("onednn-matmul: oneDNN"), std::string::npos);
}

TEST(Gemm, LibxsmmLeavesWhatItCannotDoToOpenBlas) {
  if (!cpu::gemm_library_available(GemmLibrary::libxsmm, false))
    GTEST_SKIP() << "libxsmm is not built in or not usable on this CPU";
  CleanChoice clean;
  ThreadCount tc(1);
  std::mt19937 rng(8);
  // A transposed B: no kernel; gemm_using says so, the choice never offers it.
  EXPECT_FALSE(cpu::gemm_library_supports(GemmLibrary::libxsmm, false, false, true));
  EXPECT_TRUE(cpu::gemm_library_supports(GemmLibrary::libxsmm, true, true, false));
  Problem<float> nt(false, true, {17, 33, 65}, 1.f, 0.f, 0, rng);
  std::vector<float> got = nt.c;
  try {
    cpu::gemm_using(GemmLibrary::libxsmm, false, true, nt.m, nt.n, nt.k, 1.f, nt.a.data(), nt.lda,
                    nt.b.data(), nt.ldb, 0.f, got.data(), nt.ldc);
    FAIL() << "libxsmm took a transposed B";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), CH_ERR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(e.what()).find("trans_b = 1"), std::string::npos) << e.what();
  }
  // Forced, it leaves that product (whatever alpha) and other betas to
  // OpenBLAS, bit for bit.
  cpu::force_gemm_library("libxsmm");
  for (auto [alpha, beta] : {std::pair{1.f, 0.f}, {-1.5f, 0.f}, {1.f, 0.5f}, {-1.5f, 0.5f}})
    for (bool tb : {true, false}) {
      if (!tb && beta != 0.5f) continue;  // libxsmm's own
      Problem<float> p(false, tb, {17, 33, 65}, alpha, beta, 0, rng);
      std::vector<float> mine = p.c, blas = p.c;
      cpu::gemm(false, tb, p.m, p.n, p.k, alpha, p.a.data(), p.lda, p.b.data(), p.ldb, beta,
                mine.data(), p.ldc);
      cpu::gemm_using(GemmLibrary::openblas, false, tb, p.m, p.n, p.k, alpha, p.a.data(), p.lda,
                      p.b.data(), p.ldb, beta, blas.data(), p.ldc);
      for (size_t i = 0; i + 1 < mine.size(); ++i)
        ASSERT_EQ(mine[i], blas[i]) << "alpha " << alpha << " beta " << beta << " tb " << tb;
    }
  // The kernels held stay bounded: shapes past kMaxKernels go to OpenBLAS,
  // still right.
  const size_t most = size_t(cpu::libxsmm::kMaxKernels + 50);
  std::vector<float> a(14, 0.5f), b(2 * most, 2.f), c(7 * most);
  for (int64_t m = 1; m <= cpu::libxsmm::kMaxKernels + 50; ++m) {
    ASSERT_TRUE(
        cpu::libxsmm::sgemm(false, 1, 1, 1, 1.f, a.data(), 1, b.data(), 1, 0.f, c.data(), 1) ||
        cpu::libxsmm::kernels_held() >= cpu::libxsmm::kMaxKernels);
    cpu::gemm_using(GemmLibrary::libxsmm, false, false, m % 7 + 1, m, 2, 1.f, a.data(), 2, b.data(),
                    m, 0.f, c.data(), m);
    ASSERT_EQ(c[0], 2.f) << m;
  }
  EXPECT_EQ(cpu::libxsmm::kernels_held(), cpu::libxsmm::kMaxKernels);
}

// An alpha other than 1 (SGD's W += -lr gy^T x) still runs libxsmm's kernels,
// on A scaled first: against the reference, float32 and float64, A
// transposed or not, beta 0 and 1, one and two threads, and with B
// transposed through a workspace.
template <typename T>
void check_libxsmm_with_other_alphas() {
  std::mt19937 rng(12);
  const Case cases[] = {{17, 33, 65}, {1000, 78, 100}, {10, 100, 100}};
  for (int threads : {1, 2}) {
    ThreadCount tc(threads);
    for (const Case& s : cases)
      for (bool ta : {false, true})
        for (bool tb : {false, true})
          for (T beta : {T(0), T(1)}) {
            const std::string what = std::string("libxsmm, alpha -0.01, ta ") + (ta ? "1" : "0") +
                                     " tb " + (tb ? "1" : "0") + " beta " +
                                     std::to_string(double(beta)) + " " + std::to_string(s.m) +
                                     "x" + std::to_string(s.n) + "x" + std::to_string(s.k) +
                                     " threads " + std::to_string(threads);
            Problem<T> p(ta, tb, s, T(-0.01), beta, 0, rng);
            std::vector<T> workspace(size_t(s.n * s.k), T(7)), got = p.c;
            const std::vector<T> a = p.a;
            cpu::gemm_using(GemmLibrary::libxsmm, ta, tb, p.m, p.n, p.k, p.alpha, p.a.data(), p.lda,
                            p.b.data(), p.ldb, p.beta, got.data(), p.ldc,
                            cpu::GemmBlocks::per_thread,
                            cpu::GemmWorkspace{workspace.data(), workspace.size() * sizeof(T)});
            p.expect_matches(got, what);
            if (::testing::Test::HasFatalFailure()) return;
            ASSERT_EQ(p.a, a) << what << ": A was scaled in place";
            // libxsmm's own bits: its product of A scaled beforehand, alpha 1.
            std::vector<T> scaled = a, own = p.c;
            for (T& v : scaled) v = p.alpha * v;
            cpu::gemm_using(GemmLibrary::libxsmm, ta, tb, p.m, p.n, p.k, T(1), scaled.data(), p.lda,
                            p.b.data(), p.ldb, p.beta, own.data(), p.ldc,
                            cpu::GemmBlocks::per_thread,
                            cpu::GemmWorkspace{workspace.data(), workspace.size() * sizeof(T)});
            for (size_t i = 0; i + 1 < got.size(); ++i)
              ASSERT_TRUE(got[i] == own[i] || (std::isnan(got[i]) && std::isnan(own[i])))
                  << what << " at " << i << ": " << got[i] << " against " << own[i];
          }
  }
}

TEST(Gemm, LibxsmmTakesOtherAlphasOnAScaledCopyOfA) {
  if (!cpu::gemm_library_available(GemmLibrary::libxsmm, false))
    GTEST_SKIP() << "libxsmm is not built in or not usable on this CPU";
  CleanChoice clean;
  check_libxsmm_with_other_alphas<float>();
  if (::testing::Test::HasFatalFailure()) return;
  check_libxsmm_with_other_alphas<double>();
}

// With a workspace of k x n elements, libxsmm takes a transposed B (put
// there transposed first): one block, blocks of columns (each transposes its
// own rows of B) and blocks of rows (B transposed once), float32 and
// float64, against the reference; and the chosen GEMM of such calls is a
// class of its own, where libxsmm is a candidate.
template <typename T>
void check_libxsmm_over_a_workspace() {
  std::mt19937 rng(11);
  const Case cases[] = {{17, 33, 65}, {100, 100, 784}, {333, 70, 129}, {31, 517, 40}, {1, 7, 3}};
  for (int threads : {1, 2, 3}) {
    ThreadCount tc(threads);
    for (const Case& s : cases)
      for (T beta : {T(0), T(1)})
        for (cpu::GemmBlocks blocks : {cpu::GemmBlocks::one, cpu::GemmBlocks::per_thread}) {
          Problem<T> p(false, true, s, T(1), beta, (s.m + s.k) % 2 ? 3 : 0, rng);
          // Filled with garbage: the workspace's contents are nobody's.
          std::vector<T> workspace(size_t(s.n * s.k), T(7));
          std::vector<T> got = p.c;
          cpu::gemm_using(GemmLibrary::libxsmm, false, true, p.m, p.n, p.k, p.alpha, p.a.data(),
                          p.lda, p.b.data(), p.ldb, p.beta, got.data(), p.ldc, blocks,
                          cpu::GemmWorkspace{workspace.data(), workspace.size() * sizeof(T)});
          p.expect_matches(
              got, "libxsmm over B^T " + std::to_string(s.m) + "x" + std::to_string(s.n) + "x" +
                       std::to_string(s.k) + " threads " + std::to_string(threads) +
                       (blocks == cpu::GemmBlocks::one ? " one block" : " per thread"));
          if (::testing::Test::HasFatalFailure()) return;
          got = p.c;
          cpu::gemm(false, true, p.m, p.n, p.k, p.alpha, p.a.data(), p.lda, p.b.data(), p.ldb,
                    p.beta, got.data(), p.ldc,
                    cpu::GemmWorkspace{workspace.data(), workspace.size() * sizeof(T)});
          p.expect_matches(got, "chosen, with a workspace");
          if (::testing::Test::HasFatalFailure()) return;
        }
  }
  // One element short: no workspace for B^T, so no libxsmm.
  Problem<T> p(false, true, {9, 10, 11}, T(1), T(0), 0, rng);
  std::vector<T> small(size_t(10 * 11 - 1)), got = p.c;
  try {
    cpu::gemm_using(GemmLibrary::libxsmm, false, true, p.m, p.n, p.k, p.alpha, p.a.data(), p.lda,
                    p.b.data(), p.ldb, p.beta, got.data(), p.ldc, cpu::GemmBlocks::rule,
                    cpu::GemmWorkspace{small.data(), small.size() * sizeof(T)});
    FAIL() << "libxsmm took a transposed B without room for it";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), CH_ERR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(e.what()).find("without a workspace of k x n elements"),
              std::string::npos)
        << e.what();
  }
}

TEST(Gemm, LibxsmmTakesATransposedBThroughAWorkspace) {
  if (!cpu::gemm_library_available(GemmLibrary::libxsmm, false))
    GTEST_SKIP() << "libxsmm is not built in or not usable on this CPU";
  CleanChoice clean;
  EXPECT_TRUE(cpu::gemm_library_supports(GemmLibrary::libxsmm, false, false, true, true));
  EXPECT_FALSE(cpu::gemm_library_supports(GemmLibrary::libxsmm, false, false, true, false));
  check_libxsmm_over_a_workspace<float>();
  if (::testing::Test::HasFatalFailure()) return;
  check_libxsmm_over_a_workspace<double>();
  if (::testing::Test::HasFatalFailure()) return;
  // The calls with a workspace were measured as their own class, libxsmm
  // among its candidates; the class without one was never seen.
  ThreadCount tc(1);
  EXPECT_GE(cpu::gemm_choice(false, false, true, 100, 100, 784, true), 0);
  EXPECT_EQ(cpu::gemm_choice(false, false, true, 100, 100, 784, false), -1);
  EXPECT_NE(std::string(ch_config_blas()).find("B^T in a workspace"), std::string::npos)
      << ch_config_blas();
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
  for (GemmLibrary lib : cpu::gemm_libraries(false)) {
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

// ---------------------------------------------------------------------------
// The disk cache of the choices.

// A fresh temporary folder, the cache's directory for the test's life
// (removed after, with what the test wrote there).
class TempCache {
 public:
  TempCache() {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/chainerc-gemm-cache-XXXXXX";
    std::vector<char> buf(pattern.begin(), pattern.end());
    buf.push_back('\0');
    if (!mkdtemp(buf.data())) ADD_FAILURE() << "mkdtemp failed";
    dir_ = buf.data();
    cpu::set_gemm_cache_directory(dir_.c_str());
  }
  ~TempCache() {
    cpu::set_gemm_cache_directory("");
    std::string cmd = "rm -rf '" + dir_ + "'";
    if (std::system(cmd.c_str()) != 0) ADD_FAILURE() << cmd;
  }
  const std::string& dir() const { return dir_; }
  // The names in the folder.
  std::vector<std::string> files() const {
    std::vector<std::string> out;
    if (DIR* d = opendir(dir_.c_str())) {
      while (dirent* e = readdir(d))
        if (std::string(e->d_name) != "." && std::string(e->d_name) != "..")
          out.push_back(e->d_name);
      closedir(d);
    }
    return out;
  }

 private:
  std::string dir_;
};

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

void write_file(const std::string& path, const std::string& data) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << data;
}

// The class these tests decide: float32 NT, m in (64, 128], n in (32, 64],
// k in (16, 32].
constexpr int64_t kM = 100, kN = 40, kK = 20;

// Runs the class's GEMM until it is decided (at most every candidate's
// samples); returns the chosen library. fake.m/n/k are set to the shape.
int decide(FakeStopwatch& fake) {
  std::vector<float> a(kM * kK, 1.f), b(kN * kK, 1.f), c(kM * kN);
  fake.m = kM, fake.n = kN, fake.k = kK;
  const int most = cpu::kGemmMaxSamples * 2 * cpu::kGemmLibraries;
  for (int i = 0; i <= most; ++i) {
    cpu::gemm(false, true, kM, kN, kK, 1.f, a.data(), kK, b.data(), kK, 0.f, c.data(), kN);
    EXPECT_EQ(c[0], float(kK));
    const int chosen = cpu::gemm_choice(false, false, true, kM, kN, kK);
    if (chosen >= 0) return chosen;
  }
  ADD_FAILURE() << "not decided";
  return -1;
}

// A fake stopwatch where `fastest` is twice as fast as the others.
void favour(FakeStopwatch& fake, GemmLibrary fastest) {
  for (GemmLibrary lib : cpu::gemm_candidates(false)) fake.seconds_per_gflop[lib] = 1.0;
  fake.seconds_per_gflop[fastest] = 0.5;
}

// A product of a class judged in context (NN, m in (64, 128], n and k in
// (512, 1024]: 2^27 multiply-adds): its C through one library, through
// gemm() (the class's choice), and the choice gemm_choice reports.
struct LargeProduct {
  static constexpr int64_t m = 70, n = 600, k = 600;
  std::mt19937 rng;
  Problem<float> p;

  explicit LargeProduct(unsigned seed) : rng(seed), p(false, false, {m, n, k}, 1.f, 0.f, 0, rng) {}
  std::vector<float> through(GemmLibrary lib) const {
    std::vector<float> c = p.c;
    cpu::gemm_using(lib, false, false, m, n, k, 1.f, p.a.data(), p.lda, p.b.data(), p.ldb, 0.f,
                    c.data(), p.ldc, cpu::GemmBlocks::one);
    return c;
  }
  std::vector<float> call() const {
    std::vector<float> c = p.c;
    cpu::gemm(false, false, m, n, k, 1.f, p.a.data(), p.lda, p.b.data(), p.ldb, 0.f, c.data(),
              p.ldc);
    return c;
  }
  static int choice() { return cpu::gemm_choice(false, false, false, m, n, k); }
  // A stopwatch that runs each call, counts it in `uses` and says it took
  // ns_per_flop(lib) nanoseconds per floating-point operation (a rate of
  // 1 / ns_per_flop GFLOP/s).
  static cpu::GemmStopwatch stopwatch(std::map<GemmLibrary, int>& uses,
                                      std::function<double(GemmLibrary)> ns_per_flop) {
    return [&uses, ns_per_flop](GemmLibrary lib, bool, const std::function<void()>& call) {
      call();
      ++uses[lib];
      return ns_per_flop(lib) * 2e-9 * double(m * n * k);
    };
  }
  // Bit for bit (C's element past the end is a NaN no one writes).
  static bool same(const std::vector<float>& x, const std::vector<float>& y) {
    return x.size() == y.size() && std::memcmp(x.data(), y.data(), x.size() * sizeof(float)) == 0;
  }
};

// One call of a class judged in context, checked: a timed call is computed
// by the library it timed (that library's bits), an untimed one (settling, a
// warm-up) by one of the libraries. Returns the library timed, if any.
std::optional<GemmLibrary> judged_call(const LargeProduct& large, std::map<GemmLibrary, int>& uses,
                                       const std::map<GemmLibrary, std::vector<float>>& bits,
                                       int at) {
  const std::map<GemmLibrary, int> before = uses;
  const std::vector<float> got = large.call();
  std::optional<GemmLibrary> timed;
  for (const auto& [lib, count] : uses)
    if (count != (before.count(lib) ? before.at(lib) : 0)) timed = lib;
  if (timed) {
    EXPECT_TRUE(LargeProduct::same(got, bits.at(*timed)))
        << "call " << at << ": not the bits of " << cpu::gemm_library_name(*timed);
  } else {
    bool any = false;
    for (const auto& [lib, b] : bits) any = any || LargeProduct::same(got, b);
    EXPECT_TRUE(any) << "call " << at << ": no library's bits";
  }
  return timed;
}

// A large class (from 2^kGemmContextLog2Work multiply-adds) is judged again
// on the program's own later calls: after the settling calls (the leader of
// the back-to-back calls computes those), every candidate (one dropped back
// to back too) computes a stretch of the class's calls and is timed on
// kGemmContextSamples of them, and the best of those is the choice from then
// on. Smaller classes are decided by the back-to-back calls alone.
TEST(Gemm, LargeClassesAreJudgedAgainInContext) {
  CleanChoice clean;
  cpu::set_gemm_context_warmup_for_testing(0);  // counted calls; the warm-up: below
  ThreadCount tc(1);
  const std::vector<GemmLibrary> libs = cpu::gemm_candidates(false);
  if (libs.size() < 2) GTEST_SKIP() << "one float32 GEMM library";
  TempCache cache;
  // Back to back the last library leads, and the second (with three or
  // more) is so far behind that it is dropped early; in context that one
  // (else the first) is twice as fast as the others.
  std::map<GemmLibrary, double> back_to_back, in_context;
  for (GemmLibrary lib : libs) back_to_back[lib] = in_context[lib] = 1.0;
  back_to_back[libs.back()] = 0.8;  // ahead of any margin (oneDNN's matmul may be last)
  const bool far = libs.size() >= 3;
  if (far) back_to_back[libs[1]] = 2.0;
  const GemmLibrary best = far ? libs[1] : libs.front();
  in_context[best] = 0.5;
  bool context = false;
  std::map<GemmLibrary, int> uses;
  const LargeProduct large(11);
  const int64_t m = large.m, n = large.n, k = large.k;
  const Problem<float>& p = large.p;
  cpu::set_gemm_stopwatch_for_testing(LargeProduct::stopwatch(
      uses, [&](GemmLibrary lib) { return (context ? in_context : back_to_back).at(lib); }));
  auto call = [&] { return large.call(); };
  auto same = LargeProduct::same;
  const std::vector<float> leader_bits = large.through(libs.back()),
                           best_bits = large.through(best);
  p.expect_matches(leader_bits, "the leader");
  std::map<GemmLibrary, std::vector<float>> bits;
  for (GemmLibrary lib : libs) bits[lib] = large.through(lib);

  // The first call: the back-to-back calls, then the leader's result.
  EXPECT_TRUE(same(call(), leader_bits));
  EXPECT_EQ(cpu::gemm_choice(false, false, false, m, n, k), -1) << "judged in context next";
  EXPECT_GT(uses[libs.back()], 0);
  context = true;
  uses.clear();
  const int contenders = int(libs.size());
  int calls = 0;
  // Four calls in this process; the rest in "the next process" (the choices
  // forgotten), which goes on from the samples the disk cache kept, with
  // neither the back-to-back calls nor the four timed again.
  ASSERT_EQ(cache.files().size(), 1u) << "the judging is kept from its start";
  EXPECT_NE(read_file(cache.dir() + "/" + cache.files()[0]).find("\njudging\n"), std::string::npos);
  // Each process's first kGemmContextSettle calls of the class are the
  // leader's, untimed (in this one, the first call was one of them).
  const int settle = cpu::kGemmContextSettle, samples = cpu::kGemmContextSamples;
  for (; calls < settle - 1; ++calls) ASSERT_TRUE(same(call(), leader_bits)) << calls;
  // Then the stretches, a round's samples each (kGemmContextRounds): the
  // first contender's, and one call of the second's here.
  const int per_round = samples / cpu::kGemmContextRounds;
  for (; calls < settle - 1 + per_round; ++calls)
    EXPECT_EQ(judged_call(large, uses, bits, calls), std::optional<GemmLibrary>(libs.front()));
  EXPECT_EQ(judged_call(large, uses, bits, calls++), std::optional<GemmLibrary>(libs[1]));
  EXPECT_EQ(uses[libs.front()], per_round) << "its stretch, timed";
  EXPECT_EQ(uses[libs[1]], 1);
  // The next process settles on the leader again, then the contender with
  // the fewest samples (the first of equals) has a stretch, which runs to
  // its next round's end, and so on until every one has all its samples.
  std::vector<int> have(libs.size(), 0);
  have[0] = per_round;
  have[1] = 1;
  std::vector<GemmLibrary> want;
  for (;;) {
    int next = -1;
    for (size_t i = 0; i < libs.size(); ++i)
      if (have[i] < samples && (next < 0 || have[i] < have[size_t(next)])) next = int(i);
    if (next < 0) break;
    if (want.empty() || want.back() != libs[size_t(next)]) want.push_back(libs[size_t(next)]);
    have[size_t(next)] = std::min(samples, (have[size_t(next)] / per_round + 1) * per_round);
  }
  cpu::reread_gemm_environment_for_testing();
  for (int i = 0; i < settle; ++i, ++calls) ASSERT_TRUE(same(call(), leader_bits)) << calls;
  std::vector<GemmLibrary> order;
  for (; calls < 200 && cpu::gemm_choice(false, false, false, m, n, k) < 0; ++calls) {
    std::optional<GemmLibrary> timed = judged_call(large, uses, bits, calls);
    ASSERT_TRUE(timed) << "call " << calls << ": every call of a stretch is timed here";
    if (order.empty() || order.back() != *timed) order.push_back(*timed);
  }
  EXPECT_EQ(order, want) << "stretches of a round each, the fewest samples first";
  EXPECT_EQ(calls, settle - 1 + settle + contenders * samples)
      << "one contender's call timed per call after the first calls of each process";
  for (GemmLibrary lib : libs)
    EXPECT_EQ(uses[lib], cpu::kGemmContextSamples) << cpu::gemm_library_name(lib);
  EXPECT_EQ(cpu::gemm_choice(false, false, false, m, n, k), int(best));
  EXPECT_TRUE(same(call(), best_bits)) << "the choice's bits from then on";
  const std::string first = cpu::gemm_library_name(best);
  std::string text = ch_config_blas();
  EXPECT_NE(text.find("float32 NN m<=128 n<=1024 k<=1024 1 thread: " + first +
                      (far ? " 0.5" : " 1.0") + " GFLOP/s ("),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("; in context " + first + " 2.0 GFLOP/s ("), std::string::npos) << text;
  EXPECT_NE(text.find(std::string(cpu::gemm_library_name(libs.back())) + " 50%)"),
            std::string::npos)
      << text;

  // The next process takes the choice and both sets of rates from the disk
  // cache, and times nothing.
  ASSERT_EQ(cache.files().size(), 1u);
  EXPECT_NE(read_file(cache.dir() + "/" + cache.files()[0]).find("\ncontext " + first + " "),
            std::string::npos);
  cpu::reread_gemm_environment_for_testing();
  uses.clear();
  EXPECT_TRUE(same(call(), best_bits));
  EXPECT_TRUE(uses.empty()) << "a cached class is not measured";
  text = ch_config_blas();
  EXPECT_NE(text.find("; in context " + first + " 2.0 GFLOP/s ("), std::string::npos) << text;
  EXPECT_NE(text.find("%) [cached]"), std::string::npos) << text;

  // Half the work (m in (32, 64], 2^26): decided by its first call.
  context = false;
  std::vector<float> a(40 * k, 1.f), c(40 * n);
  cpu::gemm(false, false, 40, n, k, 1.f, a.data(), k, p.b.data(), p.ldb, 0.f, c.data(), n);
  EXPECT_EQ(cpu::gemm_choice(false, false, false, 40, n, k), int(libs.back()));
}

// A library runs slower in its first calls of a process, so while a class is
// judged in context, a contender close to the leader back to back computes
// kGemmContextWarmup calls of its stretch untimed before its timed ones; one
// far behind is timed from its first call. The class is decided after every
// contender's timed samples.
TEST(Gemm, CloseContendersWarmUpBeforeTheyAreTimedInContext) {
  CleanChoice clean;
  const int warmup = 3;
  cpu::set_gemm_context_warmup_for_testing(warmup);
  ThreadCount tc(1);
  const std::vector<GemmLibrary> libs = cpu::gemm_candidates(false);
  if (libs.size() < 2) GTEST_SKIP() << "one float32 GEMM library";
  // Back to back the last library leads; with three or more, the second is
  // far behind (2.2x slower: below 70% of the leader's rate).
  std::map<GemmLibrary, double> back_to_back;
  for (GemmLibrary lib : libs) back_to_back[lib] = 1.0;
  back_to_back[libs.back()] = 0.92;
  const bool far = libs.size() >= 3;
  if (far) back_to_back[libs[1]] = 2.0;
  bool context = false;
  std::map<GemmLibrary, int> uses;
  const LargeProduct large(13);
  cpu::set_gemm_stopwatch_for_testing(LargeProduct::stopwatch(
      uses, [&](GemmLibrary lib) { return context ? 1.0 : back_to_back.at(lib); }));
  const std::vector<float> leader_bits = large.through(libs.back());
  std::map<GemmLibrary, std::vector<float>> bits;
  for (GemmLibrary lib : libs) bits[lib] = large.through(lib);
  ASSERT_TRUE(LargeProduct::same(large.call(), leader_bits));  // back to back
  ASSERT_EQ(LargeProduct::choice(), -1) << "judged in context next";
  context = true;
  uses.clear();
  const int settle = cpu::kGemmContextSettle, samples = cpu::kGemmContextSamples;
  const int contenders = int(libs.size()), far_ones = far ? 1 : 0;
  int calls = 0;
  for (; calls < settle - 1; ++calls) ASSERT_TRUE(LargeProduct::same(large.call(), leader_bits));
  // Round by round, stretch by stretch: a close contender's first calls in
  // the process untimed (in its first stretch), then its round's samples;
  // the far one's samples at once.
  const int per_round = samples / cpu::kGemmContextRounds;
  for (int round = 0; round < cpu::kGemmContextRounds; ++round)
    for (GemmLibrary lib : libs) {
      const int warm = round > 0 || (far && lib == libs[1]) ? 0 : warmup;
      for (int i = 0; i < warm; ++i, ++calls)
        EXPECT_FALSE(judged_call(large, uses, bits, calls)) << "a warm-up call is not timed";
      for (int i = 0; i < per_round; ++i, ++calls)
        EXPECT_EQ(judged_call(large, uses, bits, calls), std::optional<GemmLibrary>(lib))
            << "round " << round;
    }
  EXPECT_GE(LargeProduct::choice(), 0) << "decided by the last sample";
  EXPECT_EQ(calls, settle - 1 + contenders * samples + (contenders - far_ones) * warmup);
  for (GemmLibrary lib : libs)
    EXPECT_EQ(uses[lib], samples) << cpu::gemm_library_name(lib) << ": its timed calls only";
}

// A spell in which the machine's other work slows every call falls on one
// contender's stretch; in rounds (kGemmContextRounds) it spoils a third of
// that contender's samples, not its median: the faster library is still
// chosen. (In one stretch of nine, the disturbed one lost.)
TEST(Gemm, ADisturbedStretchDoesNotDecideTheJudging) {
  CleanChoice clean;
  cpu::set_gemm_context_warmup_for_testing(0);
  ThreadCount tc(1);
  const std::vector<GemmLibrary> libs = cpu::gemm_candidates(false);
  if (libs.size() < 2) GTEST_SKIP() << "one float32 GEMM library";
  // Back to back the last library leads; in context the first is 10% faster
  // than every other, but its first stretch runs in a spell three times
  // slower.
  const GemmLibrary faster = libs.front();
  const int per_round = cpu::kGemmContextSamples / cpu::kGemmContextRounds;
  bool context = false;
  std::map<GemmLibrary, int> uses;
  const LargeProduct large(17);
  cpu::set_gemm_stopwatch_for_testing(LargeProduct::stopwatch(uses, [&](GemmLibrary lib) {
    if (!context) return lib == libs.back() ? 0.8 : 1.0;
    if (lib != faster) return 1.0;
    const bool disturbed = uses[faster] <= per_round;  // counted before the stopwatch answers
    return disturbed ? 3.0 : 0.9;
  }));
  large.call();  // back to back
  ASSERT_EQ(LargeProduct::choice(), -1) << "judged in context next";
  context = true;
  uses.clear();
  for (int i = 0; i < 400 && LargeProduct::choice() < 0; ++i) large.call();
  EXPECT_EQ(uses[faster], cpu::kGemmContextSamples);
  EXPECT_EQ(LargeProduct::choice(), int(faster)) << ch_config_blas();
}

// One process that watches a cached choice run outside the bounds on `side`
// ("slower" / "faster") without another before it: the choice stays, nothing
// else is timed, and the doubt is kept on disk for the next process
// (kGemmRejudgeAgreeing).
void expect_a_doubting_process(const std::function<void()>& call, std::map<GemmLibrary, int>& uses,
                               GemmLibrary chosen, const std::string& cache_file,
                               const std::string& side) {
  cpu::reread_gemm_environment_for_testing();
  uses.clear();
  for (int i = 0; i < cpu::kGemmContextSettle + cpu::kGemmContextSamples + 3; ++i) call();
  EXPECT_EQ(uses[chosen], cpu::kGemmContextSamples) << side;
  EXPECT_EQ(int(uses.size()), 1) << side << ": no other library timed";
  EXPECT_EQ(LargeProduct::choice(), int(chosen)) << side;
  const std::string text = ch_config_blas();
  EXPECT_NE(text.find("(" + side + ": judged again if the next process agrees)"), std::string::npos)
      << text;
  EXPECT_NE(read_file(cache_file).find("\ndoubt " + side + "\n"), std::string::npos) << side;
}

// A large class found decided on disk is watched: its choice's own calls are
// timed in context, and where their median falls below kGemmRejudgeBelow of
// the best median in context on disk (the machine changed) in two processes
// in a row (kGemmRejudgeAgreeing), the class is judged in context again, the
// cached choice computing the results until the new choice is made.
// A judging in a disturbed spell (every library at a fraction of its rate)
// writes low rates in context and a choice made by the noise; a later calm
// process watches the choice run far above them (above kGemmRejudgeAbove)
// and judges the class again. Just below that bound it is kept.
TEST(Gemm, CachedLargeClassesJudgedInADisturbedSpellAreJudgedAgainWhenTheirChoiceRunsFaster) {
  CleanChoice clean;
  cpu::set_gemm_context_warmup_for_testing(0);
  ThreadCount tc(1);
  const std::vector<GemmLibrary> libs = cpu::gemm_candidates(false);
  if (libs.size() < 2) GTEST_SKIP() << "one float32 GEMM library";
  TempCache cache;
  std::map<GemmLibrary, double> ns_per_flop_of;
  std::map<GemmLibrary, int> uses;
  const LargeProduct large(13);
  cpu::set_gemm_stopwatch_for_testing(
      LargeProduct::stopwatch(uses, [&](GemmLibrary lib) { return ns_per_flop_of.at(lib); }));
  auto call = [&] { return large.call(); };
  auto choice = LargeProduct::choice;
  const GemmLibrary first = libs.front(), last = libs.back();
  const int settle = cpu::kGemmContextSettle, samples = cpu::kGemmContextSamples;

  // The disturbed judging: the last library a little ahead of the others,
  // all at 0.2-0.25 GFLOP/s.
  for (GemmLibrary lib : libs) ns_per_flop_of[lib] = 5.0;
  ns_per_flop_of[last] = 4.0;
  for (int i = 0; i < 400 && choice() < 0; ++i) call();
  ASSERT_EQ(choice(), int(last));

  // Calm: the choice runs at just below kGemmRejudgeAbove of its 0.25
  // GFLOP/s on disk: kept, nothing else timed.
  cpu::reread_gemm_environment_for_testing();
  ns_per_flop_of[last] = 4.0 / (cpu::kGemmRejudgeAbove - 0.01);
  uses.clear();
  for (int i = 0; i < settle + samples + 3; ++i) call();
  EXPECT_EQ(uses[last], samples);
  EXPECT_EQ(int(uses.size()), 1);
  EXPECT_EQ(choice(), int(last));

  // Calmer: the first library at 2 GFLOP/s, the choice at 1.25, five times
  // its rate on disk: doubted by one process, judged again by the next, and
  // the first library wins.
  for (GemmLibrary lib : libs) ns_per_flop_of[lib] = 0.8;
  ns_per_flop_of[first] = 0.5;
  ASSERT_EQ(cache.files().size(), 1u);
  expect_a_doubting_process(call, uses, last, cache.dir() + "/" + cache.files()[0], "faster");
  cpu::reread_gemm_environment_for_testing();
  uses.clear();
  std::map<GemmLibrary, std::vector<float>> bits;
  for (GemmLibrary lib : libs) bits[lib] = large.through(lib);
  int calls = 0;
  for (; calls < settle + samples; ++calls) call();
  EXPECT_EQ(choice(), -1) << "judged again";
  uses.clear();
  for (; calls < 400 && choice() < 0; ++calls) ASSERT_TRUE(judged_call(large, uses, bits, calls));
  EXPECT_EQ(choice(), int(first));
  for (GemmLibrary lib : libs) EXPECT_EQ(uses[lib], samples) << cpu::gemm_library_name(lib);
  const std::string text = ch_config_blas();
  EXPECT_NE(text.find("; judged again here, " + std::string(cpu::gemm_library_name(last)) +
                      " ran at 1.2 GFLOP/s"),
            std::string::npos)
      << text;
}

TEST(Gemm, CachedLargeClassesAreJudgedAgainWhenTheirChoiceRunsSlower) {
  CleanChoice clean;
  cpu::set_gemm_context_warmup_for_testing(0);  // counted calls; the warm-up: below
  ThreadCount tc(1);
  const std::vector<GemmLibrary> libs = cpu::gemm_candidates(false);
  if (libs.size() < 2) GTEST_SKIP() << "one float32 GEMM library";
  TempCache cache;
  // Back to back and in context the first runs at 2 GFLOP/s, the others at
  // 1.25, but for the second of three or more: it is far behind (0.25
  // GFLOP/s, a generic BLIS beside tuned libraries).
  std::map<GemmLibrary, double> ns_per_flop_of;
  for (GemmLibrary lib : libs) ns_per_flop_of[lib] = 0.8;
  const bool far = libs.size() >= 3;
  if (far) ns_per_flop_of[libs[1]] = 4.0;
  std::map<GemmLibrary, int> uses;
  const LargeProduct large(12);
  cpu::set_gemm_stopwatch_for_testing(
      LargeProduct::stopwatch(uses, [&](GemmLibrary lib) { return ns_per_flop_of.at(lib); }));
  auto call = [&] { return large.call(); };
  auto same = LargeProduct::same;
  auto choice = LargeProduct::choice;
  const GemmLibrary first = libs.front(), last = libs.back();
  const std::vector<float> first_bits = large.through(first), last_bits = large.through(last);
  large.p.expect_matches(first_bits, "the first library");

  // Decided in context on the first library, and written to disk.
  ns_per_flop_of[first] = 0.5;
  for (int i = 0; i < 400 && choice() < 0; ++i) call();
  ASSERT_EQ(choice(), int(first));
  const int settle = cpu::kGemmContextSettle, samples = cpu::kGemmContextSamples;

  // The next process, on the same machine: the choice's calls after the
  // settling ones are timed, 9 of them, at the rate on disk; it stays.
  cpu::reread_gemm_environment_for_testing();
  uses.clear();
  for (int i = 0; i < settle + samples + 5; ++i) ASSERT_TRUE(same(call(), first_bits)) << i;
  EXPECT_EQ(uses[first], samples) << "the watched calls, then no more";
  EXPECT_EQ(int(uses.size()), 1) << "no other library timed";
  EXPECT_EQ(choice(), int(first));
  std::string text = ch_config_blas();
  EXPECT_NE(
      text.find("; in context " + std::string(cpu::gemm_library_name(first)) + " 2.0 GFLOP/s ("),
      std::string::npos)
      << text;
  EXPECT_NE(text.find("[cached]; here 2.0 GFLOP/s"), std::string::npos) << text;

  // Just above kGemmRejudgeBelow of the rate on disk: kept too.
  cpu::reread_gemm_environment_for_testing();
  ns_per_flop_of[first] = 0.5 / (cpu::kGemmRejudgeBelow + 0.01);
  uses.clear();
  for (int i = 0; i < settle + samples; ++i) call();
  EXPECT_EQ(uses[first], samples);
  EXPECT_EQ(int(uses.size()), 1);
  EXPECT_EQ(choice(), int(first));

  // Another process on a changed machine: the choice now runs at 0.5
  // GFLOP/s in context, the last library at 4. The watch doubts it, and the
  // process after that judges the class again: every library measured back
  // to back has its stretch of calls but the far one (below half the best
  // rate both back to back and in context on disk).
  ns_per_flop_of[first] = 2.0;
  ns_per_flop_of[last] = 0.25;
  ASSERT_EQ(cache.files().size(), 1u);
  expect_a_doubting_process(call, uses, first, cache.dir() + "/" + cache.files()[0], "slower");
  cpu::reread_gemm_environment_for_testing();
  uses.clear();
  std::map<GemmLibrary, std::vector<float>> bits;
  for (GemmLibrary lib : libs) bits[lib] = large.through(lib);
  int calls = 0;
  for (; calls < settle + samples; ++calls) ASSERT_TRUE(same(call(), first_bits)) << calls;
  EXPECT_EQ(choice(), -1) << "judged again";
  ASSERT_EQ(cache.files().size(), 1u);
  EXPECT_NE(read_file(cache.dir() + "/" + cache.files()[0]).find("\njudging\n"), std::string::npos)
      << "the judging is kept from its start";
  uses.clear();
  for (; calls < 400 && choice() < 0; ++calls) ASSERT_TRUE(judged_call(large, uses, bits, calls));
  const int contenders = int(libs.size()) - (far ? 1 : 0);
  EXPECT_EQ(calls, settle + samples + contenders * samples)
      << "every library measured back to back is a contender but the far one";
  for (GemmLibrary lib : libs)
    EXPECT_EQ(uses[lib], far && lib == libs[1] ? 0 : samples) << cpu::gemm_library_name(lib);
  EXPECT_EQ(choice(), int(last));
  EXPECT_TRUE(same(call(), last_bits)) << "the new choice's bits from then on";
  text = ch_config_blas();
  EXPECT_NE(
      text.find("; in context " + std::string(cpu::gemm_library_name(last)) + " 4.0 GFLOP/s ("),
      std::string::npos)
      << text;
  EXPECT_NE(text.find("; judged again here, " + std::string(cpu::gemm_library_name(first)) +
                      " ran at 0.5 GFLOP/s"),
            std::string::npos)
      << text;

  // The process after that finds the new choice on disk.
  cpu::reread_gemm_environment_for_testing();
  EXPECT_TRUE(same(call(), last_bits));
  EXPECT_EQ(choice(), int(last));

  // The machine changes back (the first library at 4 GFLOP/s, the last at
  // 0.5), and the judging again spans two processes: the first library comes
  // back (far behind in context on disk, but not back to back), the far one
  // sits out in both, its median in context kept on disk through the judging.
  if (!far) return;
  ns_per_flop_of[first] = 0.25;
  ns_per_flop_of[last] = 2.0;
  expect_a_doubting_process(call, uses, last, cache.dir() + "/" + cache.files()[0], "slower");
  cpu::reread_gemm_environment_for_testing();
  uses.clear();
  calls = 0;
  for (; calls < settle + samples; ++calls) ASSERT_TRUE(same(call(), last_bits)) << calls;
  ASSERT_EQ(choice(), -1) << "judged again";
  uses.clear();
  for (int i = 0; i < samples; ++i, ++calls) ASSERT_TRUE(judged_call(large, uses, bits, calls));
  cpu::reread_gemm_environment_for_testing();  // this process ends mid-judging
  for (int i = 0; i < settle; ++i, ++calls)
    ASSERT_FALSE(judged_call(large, uses, bits, calls)) << "the settling calls, untimed";
  for (; calls < 400 && choice() < 0; ++calls) ASSERT_TRUE(judged_call(large, uses, bits, calls));
  for (GemmLibrary lib : libs)
    EXPECT_EQ(uses[lib], lib == libs[1] ? 0 : samples) << cpu::gemm_library_name(lib);
  EXPECT_EQ(choice(), int(first));
  text = ch_config_blas();
  EXPECT_NE(text.find(std::string(cpu::gemm_library_name(libs[1])) + " 6%"), std::string::npos)
      << "its median in context still shown (0.25 of 4 GFLOP/s): " << text;
}

// A disturbed spell crosses a bound in one process: its doubt is cleared by
// the next process that watches the choice run as judged, and a doubt on one
// side is not agreed with by a process on the other; the class is never
// judged again, nothing but the choice is timed.
TEST(Gemm, OneProcessOutsideTheBoundsDoesNotJudgeACachedClassAgain) {
  CleanChoice clean;
  cpu::set_gemm_context_warmup_for_testing(0);
  ThreadCount tc(1);
  const std::vector<GemmLibrary> libs = cpu::gemm_candidates(false);
  if (libs.size() < 2) GTEST_SKIP() << "one float32 GEMM library";
  TempCache cache;
  std::map<GemmLibrary, double> ns_per_flop_of;
  for (GemmLibrary lib : libs) ns_per_flop_of[lib] = 0.8;
  const GemmLibrary first = libs.front();
  ns_per_flop_of[first] = 0.5;  // 2 GFLOP/s, the others 1.25
  std::map<GemmLibrary, int> uses;
  const LargeProduct large(14);
  cpu::set_gemm_stopwatch_for_testing(
      LargeProduct::stopwatch(uses, [&](GemmLibrary lib) { return ns_per_flop_of.at(lib); }));
  auto call = [&] { large.call(); };
  for (int i = 0; i < 400 && LargeProduct::choice() < 0; ++i) call();
  ASSERT_EQ(LargeProduct::choice(), int(first));
  ASSERT_EQ(cache.files().size(), 1u);
  const std::string file = cache.dir() + "/" + cache.files()[0];

  ns_per_flop_of[first] = 1.0;  // a slow spell: 1 GFLOP/s
  expect_a_doubting_process(call, uses, first, file, "slower");
  ns_per_flop_of[first] = 0.5;  // calm again: the doubt goes
  cpu::reread_gemm_environment_for_testing();
  uses.clear();
  for (int i = 0; i < cpu::kGemmContextSettle + cpu::kGemmContextSamples + 3; ++i) call();
  EXPECT_EQ(uses[first], cpu::kGemmContextSamples);
  EXPECT_EQ(int(uses.size()), 1);
  EXPECT_EQ(read_file(file).find("doubt"), std::string::npos) << read_file(file);
  EXPECT_EQ(std::string(ch_config_blas()).find("judged again if"), std::string::npos)
      << ch_config_blas();

  ns_per_flop_of[first] = 1.0;  // slow, then fast: two sides, no agreement
  expect_a_doubting_process(call, uses, first, file, "slower");
  ns_per_flop_of[first] = 0.25;
  expect_a_doubting_process(call, uses, first, file, "faster");
  EXPECT_EQ(read_file(file).find("doubt slower"), std::string::npos);
  EXPECT_EQ(LargeProduct::choice(), int(first));
}

// A choice is written to the cache and the next process (a fresh chooser)
// uses it without timing anything, with the library's own bits, and says
// where it came from.
TEST(GemmCache, AChoiceIsKeptAndTheNextProcessUsesItWithoutMeasuring) {
  CleanChoice clean;
  ThreadCount tc(1);
  const std::vector<GemmLibrary> libs = nt_candidates();
  if (libs.size() < 2) GTEST_SKIP() << "one float32 GEMM library: nothing is measured";
  TempCache cache;
  EXPECT_EQ(cpu::gemm_cache_directory(), cache.dir());
  FakeStopwatch fake;
  favour(fake, libs.back());
  cpu::set_gemm_stopwatch_for_testing(fake.get());
  EXPECT_TRUE(cache.files().empty());
  ASSERT_EQ(decide(fake), int(libs.back()));
  // One file, no temporary left; it names the CPU and the libraries.
  const std::vector<std::string> files = cache.files();
  ASSERT_EQ(files.size(), 1u);
  EXPECT_EQ(files[0].find(".tmp"), std::string::npos) << files[0];
  const std::string data = read_file(cache.dir() + "/" + files[0]);
  EXPECT_NE(data.find(cpu::gemm_cache::cpu_identity()), std::string::npos);
  for (GemmLibrary lib : libs)
    EXPECT_NE(data.find(cpu::gemm_library_version(lib)), std::string::npos)
        << cpu::gemm_library_name(lib);
  EXPECT_NE(data.find("float32 NT m<=128 n<=64 k<=32 1 thread"), std::string::npos);
  // And the rules it was chosen by: under other margins it is chosen again.
  EXPECT_NE(data.find("\nrules: margins heavy "), std::string::npos) << data;
  std::string text = ch_config_blas();
  EXPECT_EQ(text.find("[cached]"), std::string::npos) << text;
  EXPECT_NE(text.find(" | choices kept in " + cache.dir()), std::string::npos) << text;

  // "The next process": the choices forgotten, the stopwatch now favouring
  // another library. The cached class is not timed at all.
  cpu::reread_gemm_environment_for_testing();
  FakeStopwatch other;
  favour(other, libs.front());
  cpu::set_gemm_stopwatch_for_testing(other.get());
  EXPECT_EQ(cpu::gemm_choice(false, false, true, kM, kN, kK), -1) << "not looked up before a GEMM";
  std::mt19937 rng(9);
  Problem<float> p(false, true, {kM, kN, kK}, 1.f, 0.f, 0, rng);
  std::vector<float> got = p.c, want = p.c;
  cpu::gemm(false, true, kM, kN, kK, 1.f, p.a.data(), p.lda, p.b.data(), p.ldb, 0.f, got.data(),
            p.ldc);
  EXPECT_EQ(other.uses, 0) << "a cached class is not measured";
  EXPECT_EQ(cpu::gemm_choice(false, false, true, kM, kN, kK), int(libs.back()));
  cpu::gemm_using(libs.back(), false, true, kM, kN, kK, 1.f, p.a.data(), p.lda, p.b.data(), p.ldb,
                  0.f, want.data(), p.ldc, cpu::GemmBlocks::one);
  for (size_t i = 0; i + 1 < want.size(); ++i) ASSERT_EQ(got[i], want[i]) << i;
  // ch_config_blas: the cached choice with its measured rates, marked.
  text = ch_config_blas();
  EXPECT_NE(text.find("float32 NT m<=128 n<=64 k<=32 1 thread: " +
                      std::string(cpu::gemm_library_name(libs.back())) + " 2.0 GFLOP/s (" +
                      cpu::gemm_library_name(libs.front()) + " 50%"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("%) [cached]"), std::string::npos) << text;
  // Another class is measured (and written) as usual.
  std::vector<float> a(64, 1.f), b(64, 1.f), c(64);
  fake.m = fake.n = fake.k = 8;
  other.m = other.n = other.k = 8;
  for (int i = 0; i < 200 && cpu::gemm_choice(false, false, false, 8, 8, 8) < 0; ++i)
    cpu::gemm(false, false, 8, 8, 8, 1.f, a.data(), 8, b.data(), 8, 0.f, c.data(), 8);
  EXPECT_EQ(cpu::gemm_choice(false, false, false, 8, 8, 8), int(libs.front()));
  EXPECT_GT(other.uses, 0);
  EXPECT_EQ(cache.files().size(), 2u);
}

// A cached choice holds only for the machine (the CPU and each library's
// identity) and the thread count it was measured with.
TEST(GemmCache, OtherCpusLibraryVersionsAndThreadCountsAreMeasuredAgain) {
  CleanChoice clean;
  ThreadCount tc(1);
  const std::vector<GemmLibrary> libs = nt_candidates();
  if (libs.size() < 2) GTEST_SKIP() << "one float32 GEMM library: nothing is measured";
  TempCache cache;
  const std::string zen4 = "cpu: vendor_id=AuthenticAMD; cpu family=25; model=17; isa=avx512f",
                    zen5 = "cpu: vendor_id=AuthenticAMD; cpu family=26; model=2; isa=avx512f",
                    old_libs = "\nlibraries: openblas: OpenBLAS 0.3.21 Cooperlake;",
                    new_libs = "\nlibraries: openblas: OpenBLAS 0.3.26 Cooperlake;";
  FakeStopwatch back, front;
  favour(back, libs.back());
  favour(front, libs.front());
  // Measured on "Zen 4 with OpenBLAS 0.3.21": the last library.
  cpu::set_gemm_machine_for_testing(zen4 + old_libs);
  cpu::set_gemm_stopwatch_for_testing(back.get());
  ASSERT_EQ(decide(back), int(libs.back()));
  // Each of these is measured anew (the stopwatch now favours the first
  // library): another CPU, another library version, another thread count.
  auto measured_anew = [&](const std::string& machine, int threads) {
    cpu::set_gemm_machine_for_testing(machine);
    ThreadCount t(threads);
    cpu::reread_gemm_environment_for_testing();
    front.uses = 0;
    cpu::set_gemm_stopwatch_for_testing(front.get());
    const int chosen = decide(front);
    return front.uses > 0 && chosen == int(libs.front());
  };
  EXPECT_TRUE(measured_anew(zen5 + old_libs, 1)) << "other CPU";
  EXPECT_TRUE(measured_anew(zen4 + new_libs, 1)) << "other library version";
  EXPECT_TRUE(measured_anew(zen4 + old_libs, 2)) << "other thread count";
  EXPECT_EQ(cache.files().size(), 4u);
  // The first machine's entry is still there and still used.
  cpu::set_gemm_machine_for_testing(zen4 + old_libs);
  cpu::reread_gemm_environment_for_testing();
  front.uses = 0;
  cpu::set_gemm_stopwatch_for_testing(front.get());
  EXPECT_EQ(decide(front), int(libs.back()));
  EXPECT_EQ(front.uses, 0);
}

// Whatever is in the file, a bad one is a miss: the class is measured and
// the file rewritten. Never a crash, never a library the file names wrongly.
TEST(GemmCache, CorruptTruncatedHugeAndLyingFilesAreIgnored) {
  CleanChoice clean;
  ThreadCount tc(1);
  const std::vector<GemmLibrary> libs = nt_candidates();
  if (libs.size() < 2) GTEST_SKIP() << "one float32 GEMM library: nothing is measured";
  TempCache cache;
  FakeStopwatch back, front;
  favour(back, libs.back());
  favour(front, libs.front());
  cpu::set_gemm_stopwatch_for_testing(back.get());
  ASSERT_EQ(decide(back), int(libs.back()));
  ASSERT_EQ(cache.files().size(), 1u);
  const std::string path = cache.dir() + "/" + cache.files()[0];
  const std::string good = read_file(path);
  ASSERT_GT(good.size(), 32u);
  // The key as written (after the 32-byte header: magic, two lengths, checksum).
  uint64_t key_len = 0;
  for (int i = 0; i < 8; ++i)
    key_len |= uint64_t(static_cast<unsigned char>(good[8 + i])) << (8 * i);
  ASSERT_LT(key_len, good.size());
  const std::string key = good.substr(32, key_len);
  // A well-formed file (right key, right checksum) whose content lies.
  auto stored = [&](const std::string& payload) {
    EXPECT_TRUE(cpu::gemm_cache::store(cache.dir(), key, payload));
    return read_file(path);
  };
  std::string lying_length = good;
  lying_length[16] = '\xff', lying_length[23] = '\x7f';  // payload length 2^63-ish
  std::string flipped = good;
  flipped.back() ^= 1;
  std::mt19937 rng(1);
  std::string garbage(good.size(), '\0');
  for (char& ch : garbage) ch = char(rng());
  std::string huge = good + std::string(cpu::gemm_cache::kMaxFileBytes, 'x');
  const std::string other = cpu::gemm_library_name(libs.front());
  const std::string last = cpu::gemm_library_name(libs.back()),
                    last2 = cpu::gemm_library_name(libs[libs.size() - 2]);
  const std::string judged = "choice " + other + "\nrate " + other + " 1\njudging\n";
  const std::string two = judged + "contender " + other + "\ncontender " + last + "\n";
  auto samples = [](const std::string& name, int count) {
    std::string out;
    for (int i = 0; i < count; ++i) out += "sample " + name + " 1e9\n";
    return out;
  };
  const std::map<std::string, std::string> cases = {
      {"empty", ""},
      {"truncated header", good.substr(0, 20)},
      {"truncated payload", good.substr(0, good.size() - 3)},
      {"lying payload length", lying_length},
      {"checksum mismatch", flipped},
      {"garbage", garbage},
      {"huge", huge},
      {"unknown library", stored("choice mkl\nrate mkl 1e9\n")},
      {"no rate for the choice", stored("choice " + other + "\n")},
      {"NaN rate", stored("choice " + other + "\nrate " + other + " nan\n")},
      {"negative rate", stored("choice " + other + "\nrate " + other + " -5\n")},
      {"two choices", stored("choice " + other + "\nchoice " + other + "\nrate " + other + " 1\n")},
      {"unknown line", stored("choice " + other + "\nrate " + other + " 1\nfastest yes\n")},
      {"no final newline", stored("choice " + other + "\nrate " + other + " 1")},
      // A class still being judged in context (see LargeClassesAreJudgedAgainInContext).
      {"one contender", stored(judged + "contender " + other + "\n")},
      {"the leader not a contender",
       stored(judged + "contender " + last + "\ncontender " + last2 + "\n")},
      {"a contender twice", stored(judged + "contender " + other + "\ncontender " + other +
                                   "\ncontender " + last + "\n")},
      {"a contender before judging",
       stored("choice " + other + "\nrate " + other + " 1\ncontender " + other + "\n")},
      {"a sample of no contender", stored(two + "sample mkl 1\n")},
      {"a sample before its contender", stored(judged + "sample " + other + " 1\ncontender " +
                                               other + "\ncontender " + last + "\n")},
      {"a NaN sample", stored(two + "sample " + other + " nan\n")},
      {"too many samples", stored(two + samples(other, cpu::kGemmContextSamples + 1))},
      {"every sample already there", stored(two + samples(other, cpu::kGemmContextSamples) +
                                            samples(last, cpu::kGemmContextSamples))},
  };
  for (const auto& [what, data] : cases) {
    write_file(path, data);
    cpu::reread_gemm_environment_for_testing();
    front.uses = 0;
    cpu::set_gemm_stopwatch_for_testing(front.get());
    EXPECT_EQ(decide(front), int(libs.front())) << what;
    EXPECT_GT(front.uses, 0) << what << ": not measured";
    // Rewritten: the next process reads the new choice.
    cpu::reread_gemm_environment_for_testing();
    back.uses = 0;
    cpu::set_gemm_stopwatch_for_testing(back.get());
    EXPECT_EQ(decide(back), int(libs.front())) << what << ": not rewritten";
    EXPECT_EQ(back.uses, 0) << what;
  }
  // A well-formed lying file is believed only where it names a candidate
  // of the class: the control case.
  write_file(path, stored("choice " + other + "\nrate " + other + " 1e9\n"));
  cpu::reread_gemm_environment_for_testing();
  back.uses = 0;
  cpu::set_gemm_stopwatch_for_testing(back.get());
  EXPECT_EQ(decide(back), int(libs.front()));
  EXPECT_EQ(back.uses, 0);
  // Not a regular file: a directory, a device or a FIFO without a writer in
  // its place (the FIFO once blocked every GEMM in open; meson's timeout
  // bounds it).
  ASSERT_EQ(std::remove(path.c_str()), 0);
  for (const std::string what : {"directory", "device", "fifo"}) {
    if (what == "directory")
      ASSERT_EQ(mkdir(path.c_str(), 0755), 0);
    else if (what == "fifo")
      ASSERT_EQ(mkfifo(path.c_str(), 0600), 0);
    else
      ASSERT_EQ(symlink("/dev/zero", path.c_str()), 0);
    cpu::reread_gemm_environment_for_testing();
    front.uses = 0;
    cpu::set_gemm_stopwatch_for_testing(front.get());
    EXPECT_EQ(decide(front), int(libs.front())) << what;
    EXPECT_GT(front.uses, 0) << what;
    // What the rename of the new entry left (a directory is not replaced).
    ASSERT_EQ(what == "directory" ? rmdir(path.c_str()) : std::remove(path.c_str()), 0) << what;
  }
}

// A directory that cannot be created or written (under a regular file, or
// in /proc) only means nothing is kept: the choices are made as before.
TEST(GemmCache, AnUnwritableDirectoryIsNoError) {
  CleanChoice clean;
  ThreadCount tc(1);
  const std::vector<GemmLibrary> libs = nt_candidates();
  if (libs.size() < 2) GTEST_SKIP() << "one float32 GEMM library: nothing is measured";
  TempCache cache;
  write_file(cache.dir() + "/file", "x");
  for (const std::string& dir : {cache.dir() + "/file/gemm", std::string("/proc/chainerc-gemm")}) {
    cpu::set_gemm_cache_directory(dir.c_str());
    FakeStopwatch fake;
    favour(fake, libs.back());
    cpu::set_gemm_stopwatch_for_testing(fake.get());
    EXPECT_EQ(decide(fake), int(libs.back())) << dir;
    cpu::reread_gemm_environment_for_testing();
    fake.uses = 0;
    cpu::set_gemm_stopwatch_for_testing(fake.get());
    EXPECT_EQ(decide(fake), int(libs.back())) << dir;
    EXPECT_GT(fake.uses, 0) << dir << ": measured again, nothing was kept";
  }
  cpu::set_gemm_cache_directory(cache.dir().c_str());
}

// Saves an environment variable and puts it back.
class SavedVariable {
 public:
  explicit SavedVariable(const char* name) : name_(name) {
    const char* v = std::getenv(name);
    had_ = v != nullptr;
    if (v) value_ = v;
  }
  ~SavedVariable() {
    if (had_)
      setenv(name_, value_.c_str(), 1);
    else
      unsetenv(name_);
  }

 private:
  const char* name_;
  bool had_ = false;
  std::string value_;
};

// The directory comes from CH_GEMM_CACHE_DIR, else XDG_CACHE_HOME, else
// HOME; CH_GEMM_CACHE=0 (or an empty directory set in the API) turns the
// cache off.
TEST(GemmCache, TheEnvironmentChoosesTheDirectoryOrTurnsTheCacheOff) {
  CleanChoice clean;
  SavedVariable s1("CH_GEMM_CACHE"), s2("CH_GEMM_CACHE_DIR"), s3("XDG_CACHE_HOME"), s4("HOME");
  unsetenv("CH_GEMM_CACHE");
  setenv("CH_GEMM_CACHE_DIR", "/somewhere/gemm", 1);
  setenv("XDG_CACHE_HOME", "/xdg", 1);
  setenv("HOME", "/home/user", 1);
  cpu::set_gemm_cache_directory(nullptr);  // back to the environment
  EXPECT_EQ(cpu::gemm_cache_directory(), "/somewhere/gemm");
  unsetenv("CH_GEMM_CACHE_DIR");
  cpu::reread_gemm_environment_for_testing();
  EXPECT_EQ(cpu::gemm_cache_directory(), "/xdg/chainerc/gemm");
  unsetenv("XDG_CACHE_HOME");
  cpu::reread_gemm_environment_for_testing();
  EXPECT_EQ(cpu::gemm_cache_directory(), "/home/user/.cache/chainerc/gemm");
  setenv("CH_GEMM_CACHE", "0", 1);
  cpu::reread_gemm_environment_for_testing();
  EXPECT_EQ(cpu::gemm_cache_directory(), "");
  EXPECT_NE(std::string(ch_config_blas()).find(" | choices not kept on disk"), std::string::npos);
  // Off: a decided class writes nothing.
  const std::vector<GemmLibrary> libs = nt_candidates();
  if (libs.size() >= 2) {
    TempCache cache;  // sets the directory explicitly: off again below
    cpu::set_gemm_cache_directory("");
    FakeStopwatch fake;
    favour(fake, libs.back());
    cpu::set_gemm_stopwatch_for_testing(fake.get());
    ThreadCount tc(1);
    EXPECT_EQ(decide(fake), int(libs.back()));
    EXPECT_TRUE(cache.files().empty());
  }
  cpu::set_gemm_cache_directory("");
}

// The C API's ch_config_set_gemm_cache / ch_config_gemm_cache: a directory
// (where the next choice is written), "" (nothing written; the choices made
// so far cleared), NULL (the environment's directory again), and a name too
// long for a path (refused, the setting kept).
TEST(GemmCache, TheCApiSetsAndReportsTheDirectory) {
  CleanChoice clean;
  SavedVariable s1("CH_GEMM_CACHE"), s2("CH_GEMM_CACHE_DIR");
  unsetenv("CH_GEMM_CACHE");
  setenv("CH_GEMM_CACHE_DIR", "/somewhere/gemm", 1);
  TempCache cache;  // a fresh folder (the C API sets it below)
  ASSERT_EQ(ch_config_set_gemm_cache(""), CH_OK);
  EXPECT_STREQ(ch_config_gemm_cache(), "");
  ASSERT_EQ(ch_config_set_gemm_cache(cache.dir().c_str()), CH_OK);
  EXPECT_EQ(std::string(ch_config_gemm_cache()), cache.dir());
  EXPECT_NE(std::string(ch_config_blas()).find(" | choices kept in " + cache.dir()),
            std::string::npos);
  const std::vector<GemmLibrary> libs = nt_candidates();
  if (libs.size() >= 2) {
    FakeStopwatch fake;
    favour(fake, libs.back());
    cpu::set_gemm_stopwatch_for_testing(fake.get());
    ThreadCount tc(1);
    EXPECT_EQ(decide(fake), int(libs.back()));
    EXPECT_EQ(cache.files().size(), 1u);
    ASSERT_EQ(ch_config_set_gemm_cache(""), CH_OK);
    EXPECT_EQ(cpu::gemm_choice(false, false, true, kM, kN, kK), -1) << "choices cleared";
    favour(fake, libs.front());
    EXPECT_EQ(decide(fake), int(libs.front())) << "measured again, not read from the folder";
    EXPECT_EQ(cache.files().size(), 1u) << "nothing written with the cache off";
  }
  ASSERT_EQ(ch_config_set_gemm_cache(cache.dir().c_str()), CH_OK);
  const std::string too_long(5000, 'x');
  EXPECT_EQ(ch_config_set_gemm_cache(too_long.c_str()), CH_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(ch_error_message()).find("is 5000 bytes long"), std::string::npos)
      << ch_error_message();
  EXPECT_EQ(std::string(ch_config_gemm_cache()), cache.dir());
  ASSERT_EQ(ch_config_set_gemm_cache(nullptr), CH_OK);
  EXPECT_STREQ(ch_config_gemm_cache(), "/somewhere/gemm");
  ASSERT_EQ(ch_config_set_gemm_cache(""), CH_OK);
}

// Processes sharing the directory: writers of the same entry and readers at
// once. A reader sees a whole entry or none (temporary file + rename).
TEST(GemmCache, ConcurrentWritersAndReadersSeeWholeEntries) {
  TempCache cache;
  const std::string key = "a key";
  const std::string one = "choice openblas\nrate openblas 1e9\n" + std::string(3000, 'a'),
                    two = "choice blis\nrate blis 2e9\n" + std::string(5000, 'b');
  std::atomic<bool> stop{false};
  std::atomic<int> bad{0}, hits{0};
  std::thread w1([&] {
    for (int i = 0; i < 300; ++i) cpu::gemm_cache::store(cache.dir(), key, one);
  });
  std::thread w2([&] {
    for (int i = 0; i < 300; ++i) cpu::gemm_cache::store(cache.dir(), key, two);
  });
  std::thread reader([&] {
    while (!stop) {
      std::string p;
      if (cpu::gemm_cache::load(cache.dir(), key, &p)) {
        ++hits;
        if (p != one && p != two) ++bad;
      }
    }
  });
  w1.join();
  w2.join();
  stop = true;
  reader.join();
  EXPECT_EQ(bad, 0);
  std::string p;
  EXPECT_TRUE(cpu::gemm_cache::load(cache.dir(), key, &p));
  EXPECT_EQ(cache.files().size(), 1u) << "no temporary file left";
  EXPECT_FALSE(cpu::gemm_cache::load(cache.dir(), "another key", &p));
}

}  // namespace
