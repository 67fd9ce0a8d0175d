// The kernel interface (src/kernels/): lookup by device, the refusal of a
// device without an implementation, completeness of the CPU backend's list,
// the CPU as a DeviceBackend, and the CPU kernels against the per-element
// math they are defined by (src/kernels/pointwise/), which the CUDA kernels
// run too.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "core/array.h"
#include "core/device_backend.h"
#include "core/error.h"
#include "kernels/math.h"
#include "kernels/pointwise/arithmetic.h"
#include "kernels/registry.h"

using namespace chainerc;

namespace {

const Device kCuda0{CH_DEVICE_CUDA, 0};

// A kernel of the test's own, implemented on the CPU only.
kernels::Kernel<kernels::UnaryFn> probe{"probe_kernel"};
void probe_cpu(const Array& x, Array& y) { y.fill(x.get(0) + 1); }

Array filled(DType dt, const Shape& s, std::vector<double> values) {
  Array a = Array::empty(dt, s);
  for (int64_t i = 0; i < a.size(); ++i) {
    double v = values[static_cast<size_t>(i) % values.size()];
    if (dt == DType::Float32)
      a.data<float>()[i] = static_cast<float>(v);
    else
      a.data<double>()[i] = v;
  }
  return a;
}

std::vector<double> random_values(int64_t n, double lo, double hi, unsigned seed) {
  std::mt19937 g(seed);
  std::uniform_real_distribution<double> d(lo, hi);
  std::vector<double> v(static_cast<size_t>(n));
  for (double& x : v) x = d(g);
  return v;
}

// |a - b| within `ulps` units in the last place of b (in a's type).
template <typename T>
bool within_ulps(T a, T b, int ulps) {
  if (a == b) return true;
  T tol = std::fabs(b) * std::numeric_limits<T>::epsilon() * ulps;
  return std::fabs(a - b) <= std::max(tol, std::numeric_limits<T>::min());
}

template <typename T, typename F>
void expect_unary_matches(const kernels::Kernel<kernels::UnaryFn>& k, F f, const Array& x,
                          int ulps) {
  Array y = Array::empty_like(x);
  k(x, y);
  for (int64_t i = 0; i < x.size(); ++i)
    ASSERT_TRUE(within_ulps(y.data<T>()[i], f(x.data<T>()[i]), ulps))
        << k.name() << " at " << i << ": " << y.data<T>()[i] << " vs " << f(x.data<T>()[i]);
}

}  // namespace

TEST(KernelRegistry, FindsTheCpuImplementationAndRefusesADeviceWithoutOne) {
  probe.set(CH_DEVICE_CPU, probe_cpu);
  Array x = Array::full(DType::Float32, Shape{3}, 2.0);
  Array y = Array::empty_like(x);
  probe(x, y);
  EXPECT_EQ(y.get(2), 3.0);
  try {
    probe.on(kCuda0, x, y);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), CH_ERR_DEVICE);
    EXPECT_NE(std::string(e.what()).find("probe_kernel"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("cuda:0"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(probe.implemented_for(CH_DEVICE_CPU));
  EXPECT_FALSE(probe.implemented_for(CH_DEVICE_CUDA));
  EXPECT_FALSE(probe.implemented_for(7));
}

TEST(KernelRegistry, EveryKernelHasACpuImplementationAndAUniqueName) {
  std::vector<const kernels::KernelBase*> all = kernels::all_kernels();
  EXPECT_GT(all.size(), 20u);
  std::set<std::string> names;
  for (const kernels::KernelBase* k : all) {
    EXPECT_TRUE(k->implemented_for(CH_DEVICE_CPU)) << k->name() << " has no CPU kernel";
    EXPECT_TRUE(names.insert(k->name()).second) << "two kernels are named " << k->name();
  }
}

// A device type without an implementation is refused through the registry
// with CH_ERR_DEVICE and the kernel's name (whether or not this build has
// CUDA kernels: this kernel has only a CPU one).
void cpu_only(const Array&) {}
kernels::Kernel<void(const Array&)> g_cpu_only{"cpu_only_test_kernel"};
// Set at start-up: the kernel is listed in all_kernels() from then on.
const bool g_cpu_only_set = (g_cpu_only.set(CH_DEVICE_CPU, cpu_only), true);

TEST(KernelRegistry, ADeviceWithoutAnImplementationIsRefusedWithCHErrDevice) {
  ASSERT_TRUE(g_cpu_only_set);
  Array a = Array::full(DType::Float32, Shape{2}, 1.0);
  g_cpu_only(a);  // the CPU one runs
  EXPECT_FALSE(g_cpu_only.implemented_for(CH_DEVICE_CUDA));
  try {
    g_cpu_only.find(kCuda0);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), CH_ERR_DEVICE);
    EXPECT_NE(std::string(e.what()).find("cpu_only_test_kernel: no kernel for cuda:0"),
              std::string::npos)
        << e.what();
  }
}

TEST(CpuBackend, IsTheBackendOfTheCpuAndAccumulatesCopiesAndFills) {
  DeviceBackend& b = backend_for(Device{}, "test");
  EXPECT_EQ(&b, &cpu_backend());
  EXPECT_EQ(b.device_count(), 1);
  Array acc = filled(DType::Float64, Shape{4}, {1, 2, 3, 4});
  Array g = filled(DType::Float64, Shape{4}, {10, 20, 30, 40});
  b.accumulate(acc, g);
  EXPECT_EQ(acc.get(0), 11);
  EXPECT_EQ(acc.get(3), 44);
  Array f = Array::full(DType::Int32, Shape{3}, 7);
  EXPECT_EQ(f.get(1), 7);
  Array c = acc.copy();
  EXPECT_EQ(c.get(2), 33);
  EXPECT_FALSE(c.shares_memory_with(acc));
  try {
    backend_for(Device{CH_DEVICE_CPU, 1}, "test");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), CH_ERR_DEVICE);
  }
}

// The CPU kernels compute exactly what the shared per-element definitions
// say (the ones nvcc compiles into the CUDA kernels), on sizes that are not
// multiples of a block or of a vector and large enough to be split over
// threads; exp and log go through libmvec and agree within a few ulp.
class PointwiseAgreement : public ::testing::TestWithParam<int64_t> {};

TEST_P(PointwiseAgreement, ArithmeticKernelsEqualTheirDefinitions) {
  using namespace pointwise;
  const int64_t n = GetParam();
  for (DType dt : {DType::Float32, DType::Float64}) {
    Array x = filled(dt, Shape{n}, random_values(n, 0.1, 3.0, 1));
    Array z = filled(dt, Shape{n}, random_values(n, -2.0, 2.0, 2));
    dispatch_floating(dt, "test", [&](auto t) {
      using T = decltype(t);
      const int exact = 0, vector_math = 4;
      expect_unary_matches<T>(
          kernels::neg, [](T v) { return Neg{}(v); }, z, exact);
      expect_unary_matches<T>(
          kernels::exp, [](T v) { return Exp{}(v); }, z, vector_math);
      expect_unary_matches<T>(
          kernels::log, [](T v) { return Log{}(v); }, x, vector_math);
      const double s = 1.75;
      // pow goes through libm's or libmvec's pow (the compiler may vectorize
      // it): a few ulp; the rest is exact.
      struct Case {
        const kernels::Kernel<kernels::UnaryScalarFn>* k;
        T (*f)(T, T);
        int ulps = 0;
      };
      const Case cases[] = {
          {&kernels::add_scalar, [](T v, T c) { return AddScalar{}(v, c); }},
          {&kernels::sub_scalar, [](T v, T c) { return SubScalar{}(v, c); }},
          {&kernels::rsub_scalar, [](T v, T c) { return RSubScalar{}(v, c); }},
          {&kernels::mul_scalar, [](T v, T c) { return MulScalar{}(v, c); }},
          {&kernels::div_scalar, [](T v, T c) { return DivScalar{}(v, c); }},
          {&kernels::rdiv_scalar, [](T v, T c) { return RDivScalar{}(v, c); }},
          {&kernels::pow_scalar, [](T v, T c) { return PowScalar{}(v, c); }, vector_math},
          {&kernels::rpow_scalar, [](T v, T c) { return RPowScalar{}(v, c); }, vector_math},
      };
      for (const Case& c : cases) {
        Array y = Array::empty_like(x);
        (*c.k)(x, s, y);
        for (int64_t i = 0; i < n; ++i)
          ASSERT_TRUE(within_ulps(y.data<T>()[i], c.f(x.data<T>()[i], static_cast<T>(s)), c.ulps))
              << c.k->name() << " at " << i;
      }
      Array y = Array::empty_like(x);
      kernels::pow_scalar_grad(z, x, 3.0, y);
      for (int64_t i = 0; i < n; ++i)
        ASSERT_TRUE(within_ulps(
            y.data<T>()[i], PowScalarGrad{}(z.data<T>()[i], x.data<T>()[i], T(3)), vector_math));
      kernels::exp_grad(z, x, y);
      for (int64_t i = 0; i < n; ++i)
        ASSERT_EQ(y.data<T>()[i], ExpGrad{}(z.data<T>()[i], x.data<T>()[i]));
    });
  }
}

TEST_P(PointwiseAgreement, BroadcastingKernelsEqualTheirDefinitions) {
  using namespace pointwise;
  const int64_t n = GetParam();
  // a: (n, 1, 3), b: (2, 3): the result (n, 2, 3) reads a[i, 0, k] and b[j, k].
  Array a = filled(DType::Float32, Shape{n, 1, 3}, random_values(n * 3, -1, 1, 3));
  Array b = filled(DType::Float32, Shape{2, 3}, {0.5, -2, 3, 4, 0.25, -1});
  Array y = Array::empty(DType::Float32, Shape{n, 2, 3});
  kernels::div(a, b, y);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < 2; ++j)
      for (int64_t k = 0; k < 3; ++k)
        ASSERT_EQ(y.data<float>()[(i * 2 + j) * 3 + k],
                  Div{}(a.data<float>()[i * 3 + k], b.data<float>()[j * 3 + k]));
  // sum_to undoes the broadcast: (n, 2, 3) -> (2, 3), in double like NumPy's pairwise sum.
  Array s = Array::empty(DType::Float32, Shape{2, 3});
  kernels::sum_to(y, s);
  for (int64_t j = 0; j < 2; ++j)
    for (int64_t k = 0; k < 3; ++k) {
      double ref = 0;
      for (int64_t i = 0; i < n; ++i) ref += y.data<float>()[(i * 2 + j) * 3 + k];
      EXPECT_NEAR(s.data<float>()[j * 3 + k], ref, 1e-4 * (1 + std::fabs(ref)));
    }
}

INSTANTIATE_TEST_SUITE_P(Sizes, PointwiseAgreement, ::testing::Values(1, 31, 1025, 100003));

TEST(GemmKernel, BatchedOffsetsAndAnEmptyInnerDimension) {
  // Two 2x2 products C_i = A_i B_i at element offsets; then k = 0 gives beta C.
  Array A = filled(DType::Float64, Shape{8}, {1, 2, 3, 4, 5, 6, 7, 8});
  Array B = filled(DType::Float64, Shape{8}, {1, 0, 0, 1, 2, 0, 0, 2});
  Array C = Array::zeros(DType::Float64, Shape{8});
  kernels::Gemm g;
  g.m = g.n = g.k = 2;
  g.lda = g.ldb = g.ldc = 2;
  g.batch = 2;
  g.stride_a = g.stride_b = g.stride_c = 4;
  kernels::gemm(g, A, B, C);
  const double want[8] = {1, 2, 3, 4, 10, 12, 14, 16};
  for (int i = 0; i < 8; ++i) EXPECT_EQ(C.get(i), want[i]) << i;
  g.k = 0;
  g.beta = 0.5;
  kernels::gemm(g, A, B, C);
  for (int i = 0; i < 8; ++i) EXPECT_EQ(C.get(i), want[i] / 2) << i;
}
