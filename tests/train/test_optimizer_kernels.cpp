// The optimizers' kernels (src/kernels/optimizers.h) on the CPU against their
// per-element definitions (src/kernels/pointwise/optimizers.h) applied
// element by element in a plain loop here: the CPU backend's loops must give
// the very numbers the functors give (bit for bit), over arrays long enough to
// be split over the thread pool. What the functors compute is checked against
// Chainer's reference values in test_optimizer.cpp.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstring>
#include <random>
#include <tuple>
#include <vector>

#include "backend/cpu/parallel.h"
#include "core/array.h"
#include "kernels/math.h"
#include "kernels/optimizers.h"

using namespace chainerc;

namespace {

// Several chunks of the pool (kElementwiseGrain elements each) and a ragged end.
constexpr int64_t kN = 3 * cpu::kElementwiseGrain + 123;

template <typename T>
constexpr DType dtype_of() {
  return std::is_same_v<T, float> ? DType::Float32 : DType::Float64;
}

template <typename T>
std::vector<T> random_values(std::mt19937& gen, double lo, double hi) {
  std::uniform_real_distribution<double> dist(lo, hi);
  std::vector<T> v(static_cast<size_t>(kN));
  for (T& x : v) x = static_cast<T>(dist(gen));
  return v;
}

template <typename T>
Array array_of(const std::vector<T>& v) {
  Array a = Array::empty(dtype_of<T>(), Shape{static_cast<int64_t>(v.size())});
  std::memcpy(a.raw(), v.data(), v.size() * sizeof(T));
  return a;
}

// How many elements of `a` differ in bits from `expected` (and the first one).
template <typename T>
::testing::AssertionResult same_bits(const Array& a, const std::vector<T>& expected,
                                     const char* what) {
  const T* p = a.data<T>();
  int64_t bad = 0, first = -1;
  for (size_t i = 0; i < expected.size(); ++i) {
    if (std::memcmp(&p[i], &expected[i], sizeof(T)) != 0) {
      if (first < 0) first = static_cast<int64_t>(i);
      ++bad;
    }
  }
  if (bad == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << what << ": " << bad << " of " << expected.size() << " elements differ; first at "
         << first << ": kernel " << p[first] << ", functor "
         << expected[static_cast<size_t>(first)];
}

// Runs `call(param, grad, states)` (the kernel) and Rule<T>(hp) element by
// element on copies of the same random inputs; states start in [0.01, 1)
// (second moments are non-negative).
template <typename T, template <typename> class Rule, size_t NS, typename Hyper, typename Call>
void compare_update(const Hyper& hp, Call call) {
  std::mt19937 gen(1234);
  std::vector<T> p = random_values<T>(gen, -1, 1), g = random_values<T>(gen, -1, 1);
  std::array<std::vector<T>, NS> s;
  for (auto& v : s) v = random_values<T>(gen, 0.01, 1);

  Array pa = array_of(p), ga = array_of(g);
  std::array<Array, NS> sa;
  for (size_t j = 0; j < NS; ++j) sa[j] = array_of(s[j]);
  call(pa, ga, sa);

  const Rule<T> rule(hp);
  for (size_t i = 0; i < p.size(); ++i) {
    std::array<T, NS> st;
    for (size_t j = 0; j < NS; ++j) st[j] = s[j][i];
    std::apply([&](auto&... x) { rule(p[i], g[i], x...); }, st);
    for (size_t j = 0; j < NS; ++j) s[j][i] = st[j];
  }
  EXPECT_TRUE(same_bits(pa, p, "param"));
  for (size_t j = 0; j < NS; ++j) EXPECT_TRUE(same_bits(sa[j], s[j], "state"));
  // The gradient is read only.
  EXPECT_TRUE(same_bits(ga, g, "grad"));
}

template <typename T>
void compare_all_updates() {
  using namespace pointwise;
  {
    SCOPED_TRACE("SGD");
    SgdHyper hp{0.1};
    compare_update<T, SgdRule, 0>(hp, [&](Array& p, const Array& g, std::array<Array, 0>&) {
      kernels::sgd_update(hp, p, g);
    });
  }
  {
    SCOPED_TRACE("MomentumSGD");
    MomentumSgdHyper hp{0.05, 0.9};
    compare_update<T, MomentumSgdRule, 1>(hp, [&](Array& p, const Array& g, auto& s) {
      kernels::momentum_sgd_update(hp, p, g, s[0]);
    });
  }
  {
    SCOPED_TRACE("AdaGrad");
    AdaGradHyper hp{0.01, 1e-8};
    compare_update<T, AdaGradRule, 1>(
        hp, [&](Array& p, const Array& g, auto& s) { kernels::adagrad_update(hp, p, g, s[0]); });
  }
  {
    SCOPED_TRACE("AdaDelta");
    AdaDeltaHyper hp{0.95, 1e-6};
    compare_update<T, AdaDeltaRule, 2>(hp, [&](Array& p, const Array& g, auto& s) {
      kernels::adadelta_update(hp, p, g, s[0], s[1]);
    });
  }
  {
    SCOPED_TRACE("Adam");
    // Step 3 of Adam(alpha=0.001, beta1=0.9, beta2=0.999, lam=1-1e-8).
    const double t = 3, lam = 1 - 1e-8;
    AdamHyper hp{0.001 * std::sqrt(1 - std::pow(0.999, t)) / (1 - std::pow(0.9, t)),
                 0.9 * std::pow(lam, t - 1), 0.999, 1e-8};
    compare_update<T, AdamRule, 2>(
        hp, [&](Array& p, const Array& g, auto& s) { kernels::adam_update(hp, p, g, s[0], s[1]); });
  }
  {
    SCOPED_TRACE("RMSprop");
    RmspropHyper hp{0.01, 0.99, 1e-8};
    compare_update<T, RmspropRule, 1>(
        hp, [&](Array& p, const Array& g, auto& s) { kernels::rmsprop_update(hp, p, g, s[0]); });
  }
}

TEST(OptimizerKernels, UpdatesEqualTheirFunctorsFloat32) { compare_all_updates<float>(); }
TEST(OptimizerKernels, UpdatesEqualTheirFunctorsFloat64) { compare_all_updates<double>(); }

template <typename T>
void compare_grad_utils() {
  std::mt19937 gen(99);
  const std::vector<T> x = random_values<T>(gen, -2, 2), y = random_values<T>(gen, -2, 2);

  {
    SCOPED_TRACE("scale_in_place");
    Array a = array_of(x);
    kernels::scale_in_place(a, 0.37);
    std::vector<T> e = x;
    for (T& v : e) pointwise::ScaleInPlace{}(v, static_cast<T>(0.37));
    EXPECT_TRUE(same_bits(a, e, "x"));
  }
  {
    SCOPED_TRACE("add_scaled_in_place");
    Array a = array_of(y), b = array_of(x);
    kernels::add_scaled_in_place(a, 1e-3, b);
    std::vector<T> e = y;
    for (size_t i = 0; i < e.size(); ++i)
      pointwise::AddScaledInPlace{}(e[i], x[i], static_cast<T>(1e-3));
    EXPECT_TRUE(same_bits(a, e, "y"));
    EXPECT_TRUE(same_bits(b, x, "x"));
  }
  {
    SCOPED_TRACE("zero_fill");
    Array a = array_of(x);
    kernels::zero_fill(a);
    EXPECT_TRUE(same_bits(a, std::vector<T>(x.size(), T(0)), "x"));
  }
  {
    SCOPED_TRACE("sum_of_squares");
    Array a = array_of(x);
    // In blocks summed in order: the sequential sum agrees to rounding, and
    // the result does not depend on the thread count.
    long double e = 0;
    for (T v : x) e += static_cast<long double>(pointwise::SquareAsDouble{}(v));
    const double total = kernels::sum_of_squares(a);
    EXPECT_NEAR(total, static_cast<double>(e), 1e-12 * static_cast<double>(e));
    const int saved = cpu::num_threads();
    cpu::set_num_threads(1);
    const double one_thread = kernels::sum_of_squares(a);
    cpu::set_num_threads(saved);
    EXPECT_EQ(std::memcmp(&total, &one_thread, sizeof total), 0) << total << " vs " << one_thread;
    EXPECT_EQ(kernels::sum_of_squares(Array::empty(dtype_of<T>(), Shape{0})), 0.0);
  }
}

TEST(OptimizerKernels, GradientUtilitiesEqualTheirFunctorsFloat32) { compare_grad_utils<float>(); }
TEST(OptimizerKernels, GradientUtilitiesEqualTheirFunctorsFloat64) { compare_grad_utils<double>(); }

// Every optimizer kernel has a CPU implementation and, in a build with the
// CUDA backend, a CUDA one (cuda/ops/optimizers/, checked against the CPU in
// tests/gpu/functions/test_optimizers.cpp); a device type without one is
// refused with CH_ERR_DEVICE naming the kernel.
TEST(OptimizerKernels, RegisteredForTheCpuAndTheCudaBackend) {
  const Device cpu{CH_DEVICE_CPU, 0}, cuda{CH_DEVICE_CUDA, 0}, none{CH_DEVICE_CUDA + 1, 0};
  EXPECT_TRUE(kernels::sgd_update.implemented_for(cpu.type));
  EXPECT_TRUE(kernels::momentum_sgd_update.implemented_for(cpu.type));
  EXPECT_TRUE(kernels::adagrad_update.implemented_for(cpu.type));
  EXPECT_TRUE(kernels::adadelta_update.implemented_for(cpu.type));
  EXPECT_TRUE(kernels::adam_update.implemented_for(cpu.type));
  EXPECT_TRUE(kernels::rmsprop_update.implemented_for(cpu.type));
  EXPECT_TRUE(kernels::zero_fill.implemented_for(cpu.type));
  EXPECT_TRUE(kernels::scale_in_place.implemented_for(cpu.type));
  EXPECT_TRUE(kernels::add_scaled_in_place.implemented_for(cpu.type));
  EXPECT_TRUE(kernels::sum_of_squares.implemented_for(cpu.type));
#if defined(CH_HAVE_CUDA)
  const bool have_cuda = true;
#else
  const bool have_cuda = false;
#endif
  EXPECT_EQ(kernels::sgd_update.implemented_for(cuda.type), have_cuda);
  EXPECT_EQ(kernels::momentum_sgd_update.implemented_for(cuda.type), have_cuda);
  EXPECT_EQ(kernels::adagrad_update.implemented_for(cuda.type), have_cuda);
  EXPECT_EQ(kernels::adadelta_update.implemented_for(cuda.type), have_cuda);
  EXPECT_EQ(kernels::adam_update.implemented_for(cuda.type), have_cuda);
  EXPECT_EQ(kernels::rmsprop_update.implemented_for(cuda.type), have_cuda);
  EXPECT_EQ(kernels::zero_fill.implemented_for(cuda.type), have_cuda);
  EXPECT_EQ(kernels::scale_in_place.implemented_for(cuda.type), have_cuda);
  EXPECT_EQ(kernels::add_scaled_in_place.implemented_for(cuda.type), have_cuda);
  EXPECT_EQ(kernels::sum_of_squares.implemented_for(cuda.type), have_cuda);
  EXPECT_FALSE(kernels::adam_update.implemented_for(none.type));
  Array p = Array::zeros(DType::Float32, Shape{4}), g = Array::zeros(DType::Float32, Shape{4});
  try {
    kernels::sgd_update.on(none, pointwise::SgdHyper{0.1}, p, g);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), CH_ERR_DEVICE);
    EXPECT_NE(std::string(e.what()).find("sgd_update"), std::string::npos) << e.what();
  }
}

}  // namespace
