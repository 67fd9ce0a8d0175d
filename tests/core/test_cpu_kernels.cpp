// CPU kernels under the ops: the float32 GEMM (oneDNN where built with it,
// split over our threads), the libmvec-vectorised exp/log/tanh/sigmoid, and
// the full-array sum. References are computed in the test in double
// precision with libm and plain loops.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "backend/cpu/elementwise.h"
#include "backend/cpu/gemm.h"
#include "backend/cpu/parallel.h"
#include "backend/cpu/vector_math.h"
#include "core/array.h"
#include "kernels/activation.h"
#include "kernels/connection.h"
#include "kernels/loss.h"
#include "thread_count.h"

#if CH_HAVE_DNNL
#include <omp.h>
#endif

using namespace chainerc;

namespace {

using test_util::ThreadCount;

// Row-major C = op(A) op(B) + beta C in double, the textbook triple loop.
std::vector<double> reference_gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k,
                                   const std::vector<float>& a, int64_t lda,
                                   const std::vector<float>& b, int64_t ldb, float beta,
                                   const std::vector<float>& c, int64_t ldc) {
  std::vector<double> out(static_cast<size_t>(m * ldc));
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double s = beta * static_cast<double>(c[i * ldc + j]);
      for (int64_t p = 0; p < k; ++p)
        s += static_cast<double>(ta ? a[p * lda + i] : a[i * lda + p]) *
             static_cast<double>(tb ? b[j * ldb + p] : b[p * ldb + j]);
      out[i * ldc + j] = s;
    }
  return out;
}

struct GemmCase {
  bool ta, tb;
  int64_t m, n, k;
  float beta;
};

TEST(CpuGemm, MatchesReferenceForEveryLayoutSplitAndThreadCount) {
  // Shapes above the threading threshold (split in row or column blocks that
  // are not multiples of 16), below it, degenerate k, and padded row strides.
  const GemmCase cases[] = {
      {false, true, 100, 100, 784, 0.f},  {true, false, 100, 784, 100, 1.f},
      {false, false, 100, 130, 300, 0.f}, {true, true, 333, 70, 129, 1.f},
      {false, true, 3, 5, 7, 0.f},        {false, false, 1, 1, 1, 1.f},
      {true, false, 50, 40, 0, 1.f},      {false, false, 517, 33, 260, 0.f},
  };
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  for (int threads : {1, 2, 3}) {
    ThreadCount tc(threads);
    for (const GemmCase& g : cases) {
      const int64_t pad = 3;  // row strides larger than the rows
      const int64_t lda = (g.ta ? g.m : g.k) + pad, ldb = (g.tb ? g.k : g.n) + pad, ldc = g.n + pad;
      std::vector<float> a(static_cast<size_t>((g.ta ? g.k : g.m) * lda + 1)),
          b(static_cast<size_t>((g.tb ? g.n : g.k) * ldb + 1)), c(static_cast<size_t>(g.m * ldc));
      for (float& v : a) v = u(rng);
      for (float& v : b) v = u(rng);
      for (float& v : c) v = u(rng);
      const std::vector<double> want =
          reference_gemm(g.ta, g.tb, g.m, g.n, g.k, a, lda, b, ldb, g.beta, c, ldc);
      std::vector<float> got = c;
      cpu::gemm(g.ta, g.tb, g.m, g.n, g.k, 1.f, a.data(), lda, b.data(), ldb, g.beta, got.data(),
                ldc);
      for (int64_t i = 0; i < g.m; ++i)
        for (int64_t j = 0; j < ldc; ++j) {
          const size_t at = static_cast<size_t>(i * ldc + j);
          if (j >= g.n) {  // padding between rows is never written
            ASSERT_EQ(got[at], c[at]) << "padding written at " << i << "," << j;
            continue;
          }
          ASSERT_NEAR(got[at], want[at], 1e-4 * (1 + std::fabs(want[at])))
              << "threads " << threads << " m " << g.m << " n " << g.n << " k " << g.k << " at "
              << i << "," << j;
        }
    }
  }
}

TEST(CpuGemm, NamesTheLibrariesAndLeavesTheCallersOpenMPSettingAlone) {
  const std::string name = cpu::blas_name();
  EXPECT_NE(name.find("OpenBLAS"), std::string::npos) << name;
#if CH_HAVE_DNNL
  EXPECT_NE(name.find("oneDNN"), std::string::npos) << name;
  // oneDNN runs each call on one OpenMP thread; the caller's own OpenMP
  // thread count must be what it was.
  omp_set_num_threads(5);
  std::vector<float> a(256 * 256, 1.f), b(256 * 256, 1.f), c(256 * 256);
  cpu::gemm(false, false, 256, 256, 256, 1.f, a.data(), 256, b.data(), 256, 0.f, c.data(), 256);
  EXPECT_EQ(omp_get_max_threads(), 5);
  EXPECT_EQ(c[0], 256.f);
#endif
}

template <typename T>
void check_vector_function(const char* what, void (*f)(const T*, T*, int64_t),
                           double (*reference)(double), const std::vector<T>& x, double rtol) {
  std::vector<T> y(x.size());
  f(x.data(), y.data(), static_cast<int64_t>(x.size()));
  std::vector<T> in_place = x;
  f(in_place.data(), in_place.data(), static_cast<int64_t>(x.size()));
  for (size_t i = 0; i < x.size(); ++i) {
    const double want = reference(static_cast<double>(x[i]));
    ASSERT_EQ(std::isnan(static_cast<double>(y[i])), std::isnan(want))
        << what << "(" << x[i] << ")";
    if (!std::isnan(want)) {
      if (std::isinf(want) || want == 0)
        ASSERT_EQ(static_cast<double>(y[i]), static_cast<T>(want)) << what << "(" << x[i] << ")";
      else
        ASSERT_NEAR(static_cast<double>(y[i]), want, rtol * std::fabs(want) + 1e-300)
            << what << "(" << x[i] << ")";
    }
    ASSERT_TRUE(y[i] == in_place[i] || (std::isnan(y[i]) && std::isnan(in_place[i])))
        << what << ": in place differs at " << i;
  }
}

double sigmoid_ref(double v) { return 1.0 / (1.0 + std::exp(-v)); }
double exp_ref(double v) { return std::exp(v); }
double log_ref(double v) { return std::log(v); }
double tanh_ref(double v) { return std::tanh(v); }

template <typename T>
std::vector<T> vector_inputs(bool positive) {
  // Every block length around the 256-element blocks, plus special values.
  std::vector<T> x;
  std::mt19937 rng(3);
  std::uniform_real_distribution<double> u(positive ? 1e-6 : -30.0, 30.0);
  for (int i = 0; i < 1000; ++i) x.push_back(static_cast<T>(u(rng)));
  const T inf = std::numeric_limits<T>::infinity();
  x.push_back(std::numeric_limits<T>::quiet_NaN());
  x.push_back(inf);
  x.push_back(T(0));
  if (!positive) {
    x.push_back(-inf);
    x.push_back(T(-1000));  // exp underflows to 0, sigmoid to 0
    x.push_back(T(1000));   // exp overflows to inf
  } else {
    x.push_back(std::numeric_limits<T>::min());
  }
  return x;
}

TEST(CpuVectorMath, AgreesWithLibmIncludingSpecialValuesAndInPlace) {
  for (size_t n : {size_t{0}, size_t{1}, size_t{255}, size_t{256}, size_t{257}, size_t{1006}}) {
    std::vector<float> xf = vector_inputs<float>(false), pf = vector_inputs<float>(true);
    std::vector<double> xd = vector_inputs<double>(false), pd = vector_inputs<double>(true);
    xf.resize(std::min(n, xf.size()));
    xd.resize(std::min(n, xd.size()));
    pf.resize(std::min(n, pf.size()));
    pd.resize(std::min(n, pd.size()));
    // libmvec's float32 functions are within a few ulp (1 ulp = 6e-8).
    check_vector_function<float>("exp", cpu::vector_exp, exp_ref, xf, 1e-6);
    check_vector_function<float>("tanh", cpu::vector_tanh, tanh_ref, xf, 1e-6);
    check_vector_function<float>("sigmoid", cpu::vector_sigmoid, sigmoid_ref, xf, 1e-6);
    check_vector_function<float>("log", cpu::vector_log, log_ref, pf, 1e-6);
    check_vector_function<double>("exp", cpu::vector_exp, exp_ref, xd, 1e-14);
    check_vector_function<double>("tanh", cpu::vector_tanh, tanh_ref, xd, 1e-14);
    check_vector_function<double>("sigmoid", cpu::vector_sigmoid, sigmoid_ref, xd, 1e-14);
    check_vector_function<double>("log", cpu::vector_log, log_ref, pd, 1e-14);
  }
  // The special values themselves (the resize above may cut them off).
  check_vector_function<float>("exp", cpu::vector_exp, exp_ref, vector_inputs<float>(false), 1e-6);
  check_vector_function<double>("log", cpu::vector_log, log_ref, vector_inputs<double>(true),
                                1e-14);
}

TEST(CpuVectorMath, ReductionsAgreeWithPlainLoops) {
  std::mt19937 rng(5);
  std::uniform_real_distribution<double> u(-2.0, 2.0);
  for (int64_t n : {1, 15, 16, 17, 100, 1000, 1001}) {
    std::vector<double> x(static_cast<size_t>(n)), y(static_cast<size_t>(n));
    for (double& v : x) v = u(rng);
    for (double& v : y) v = u(rng);
    std::vector<float> xf(x.begin(), x.end()), yf(y.begin(), y.end());
    double sum = 0, dot = 0, max = x[0], squared_deviations = 0;
    for (int64_t i = 0; i < n; ++i) {
      sum += x[i];
      dot += x[i] * y[i];
      max = std::max(max, x[i]);
      squared_deviations += (x[i] - 0.5) * (x[i] - 0.5);
    }
    EXPECT_NEAR(cpu::vector_sum(x.data(), n), sum, 1e-12) << n;
    EXPECT_NEAR(cpu::vector_dot(x.data(), y.data(), n), dot, 1e-12) << n;
    EXPECT_EQ(cpu::vector_max(x.data(), n), max) << n;
    EXPECT_NEAR(cpu::vector_squared_deviation_sum(x.data(), n, 0.5), squared_deviations,
                1e-14 * squared_deviations);
    EXPECT_NEAR(cpu::vector_squared_deviation_sum(xf.data(), n, 0.5f), squared_deviations,
                1e-5 * squared_deviations);
    EXPECT_NEAR(cpu::vector_sum(xf.data(), n), sum, 1e-4) << n;
    EXPECT_NEAR(cpu::vector_dot(xf.data(), yf.data(), n), dot, 1e-4) << n;
    EXPECT_EQ(cpu::vector_max(xf.data(), n), static_cast<float>(max)) << n;
  }
}

TEST(CpuSum, FullSumIsAccurateAndTheSameForEveryThreadCount) {
  // 1,000,003 float32 values whose exact sum is known: i % 7 - 3 sums to a
  // small integer, and the float32 terms are exact.
  const int64_t n = 1000003;
  Array x = Array::empty(DType::Float32, Shape{n});
  double exact = 0;
  for (int64_t i = 0; i < n; ++i) {
    x.data<float>()[i] = static_cast<float>(i % 7 - 3) + 0.25f;
    exact += static_cast<double>(i % 7 - 3) + 0.25;
  }
  float first = 0;
  for (int threads : {1, 2, 3}) {
    ThreadCount tc(threads);
    const float got = cpu::sum_to(x, Shape{}).data<float>()[0];
    EXPECT_EQ(got, static_cast<float>(exact)) << threads << " threads";
    if (threads == 1) first = got;
    EXPECT_EQ(got, first) << "the sum depends on the thread count";
  }
}

TEST(CpuLinear, BiasGradientAddsEachColumnsRowsInOrderAtEveryThreadCount) {
  // gb += sum(gy, axis 0), split over the columns at 2 and 3 threads (70,001
  // columns of 3 rows: several chunks of kElementwiseGrain elements). Each
  // column adds its rows first to last, so the float32 result is the plain
  // loop's to the bit, whatever the split or the vector width.
  const int64_t rows = 3, cols = 70001;
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::vector<float> gy(static_cast<size_t>(rows * cols)), gb0(static_cast<size_t>(cols));
  for (float& v : gy) v = u(rng);
  for (float& v : gb0) v = u(rng);
  std::vector<float> want(gb0);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) want[j] += gy[i * cols + j];
  Array agy = Array::empty(DType::Float32, Shape{rows, cols});
  std::copy(gy.begin(), gy.end(), agy.data<float>());
  for (int threads : {1, 2, 3}) {
    ThreadCount tc(threads);
    Array gb = Array::empty(DType::Float32, Shape{cols});
    std::copy(gb0.begin(), gb0.end(), gb.data<float>());
    kernels::linear_bias_grad(agy, gb);
    int64_t differ = 0;
    for (int64_t j = 0; j < cols; ++j) differ += gb.data<float>()[j] != want[j];
    EXPECT_EQ(differ, 0) << threads << " threads";
    EXPECT_NEAR(
        gb.data<float>()[cols - 1],
        static_cast<double>(gb0[cols - 1]) + gy[cols - 1] + gy[2 * cols - 1] + gy[3 * cols - 1],
        1e-5);
  }
}

TEST(CpuSoftmaxCrossEntropy, BlocksOfRowsMatchDoublePrecisionWithTheSameBitsAtEveryThreadCount) {
  // Rows go through exp and log in blocks (softmax_rows.h: 25 rows of 10
  // classes; one row of 300); 10,007 and 257 rows make several chunks at 2
  // and 3 threads, and a last block shorter than the rest. Probabilities and the mean loss are
  // checked against a double-precision softmax with libm, and must not
  // change with the thread count.
  for (const int64_t c : {10, 300}) {
    const int64_t n = c == 10 ? 10007 : 257;
    std::mt19937 rng(11);
    std::uniform_real_distribution<float> u(-8.f, 8.f);
    Array x = Array::empty(DType::Float32, Shape{n, c});
    Array t = Array::empty(DType::Int32, Shape{n});
    for (int64_t k = 0; k < n * c; ++k) x.data<float>()[k] = u(rng);
    for (int64_t i = 0; i < n; ++i) t.data<int32_t>()[i] = static_cast<int32_t>((i * 7) % c);
    double want_loss = 0;
    std::vector<double> want(static_cast<size_t>(n * c));
    for (int64_t i = 0; i < n; ++i) {
      const float* xr = x.data<float>() + i * c;
      double m = xr[0], s = 0;
      for (int64_t j = 0; j < c; ++j) m = std::max(m, static_cast<double>(xr[j]));
      for (int64_t j = 0; j < c; ++j) s += std::exp(xr[j] - m);
      for (int64_t j = 0; j < c; ++j) want[i * c + j] = std::exp(xr[j] - m) / s;
      want_loss += std::log(s) + m - xr[t.data<int32_t>()[i]];
    }
    want_loss /= static_cast<double>(n);
    std::vector<float> first;
    for (int threads : {1, 2, 3}) {
      ThreadCount tc(threads);
      Array prob = Array::empty(DType::Float32, Shape{n, c});
      Array loss = Array::empty(DType::Float32, Shape{});
      kernels::softmax_cross_entropy(x, t, prob, loss);
      double worst = 0;
      for (int64_t k = 0; k < n * c; ++k)
        worst = std::max(worst, std::abs(prob.data<float>()[k] - want[k]) / (want[k] + 1e-30));
      EXPECT_LT(worst, 1e-5) << c << " classes, " << threads << " threads";
      EXPECT_NEAR(loss.data<float>()[0], want_loss, 1e-5 * std::abs(want_loss))
          << c << " classes, " << threads << " threads";
      // softmax's (N, C) rows take the same path (softmax_rows.h): the same bits.
      Array y = Array::empty(DType::Float32, Shape{n, c});
      kernels::softmax(x, y);
      EXPECT_TRUE(std::equal(y.data<float>(), y.data<float>() + n * c, prob.data<float>()))
          << c << " classes, " << threads << " threads: softmax differs from the loss's";
      std::vector<float> got(prob.data<float>(), prob.data<float>() + n * c);
      got.push_back(loss.data<float>()[0]);
      if (threads == 1) first = got;
      EXPECT_EQ(got, first) << c << " classes: the result depends on the thread count";
    }
  }
}

TEST(CpuBroadcast, OneRowToEveryRowAtEveryThreadCount) {
  // A row broadcast over a batch (Linear's bias) is copied row by row and
  // split over the pool: 3 rows of 70,001 (a chunk per row), 40,000 rows of
  // 5 from shape (1, 5), and a 2-D row into a 3-D output.
  struct Case {
    Shape from, to;
  };
  for (const Case& k : {Case{Shape{70001}, Shape{3, 70001}}, Case{Shape{1, 5}, Shape{40000, 5}},
                        Case{Shape{1, 7}, Shape{3, 5000, 7}}}) {
    Array x = Array::empty(DType::Float32, k.from);
    for (int64_t j = 0; j < x.size(); ++j) x.data<float>()[j] = 0.5f * static_cast<float>(j) - 3.f;
    for (int threads : {1, 2, 3}) {
      ThreadCount tc(threads);
      Array out = Array::empty(DType::Float32, k.to);
      cpu::broadcast_into(x, out);
      int64_t differ = 0;
      for (int64_t i = 0; i < out.size(); ++i)
        differ += out.data<float>()[i] != x.data<float>()[i % x.size()];
      EXPECT_EQ(differ, 0) << k.from.to_string() << " -> " << k.to.to_string() << ", " << threads
                           << " threads";
    }
  }
}

}  // namespace
