// ch_elementwise_kernel on the CPU through the C API: the seed's MulAdd
// kernels (typed and with the placeholder T), broadcasting, raw inputs, given
// outputs, math functions, int32, compile errors and bad parameters.
// References are computed in the tests with plain loops over the same values
// in the same precision (stated at each test).
#include <cmath>
#include <string>
#include <vector>

#include "kernel_test_util.h"
#include "prelude_contract.h"

using namespace capi_test;
using namespace kernel_test;

namespace {

class Elementwise : public CapiTest {
 protected:
  void SetUp() override {
    CapiTest::SetUp();
    if (!ch_kernel_cpu_supported())
      GTEST_SKIP() << "this build has no CPU kernel compiler (libtcc)";
  }
};

// Reference: w = x * y + z in float32 arithmetic (the seed's muladd_fwd).
std::vector<double> muladd_f32(const std::vector<double>& x, const std::vector<double>& y,
                               const std::vector<double>& z) {
  std::vector<double> w(x.size());
  for (size_t k = 0; k < x.size(); ++k) {
    float p = static_cast<float>(x[k]) * static_cast<float>(y[k]);
    w[k] = static_cast<float>(p + static_cast<float>(z[k]));
  }
  return w;
}

TEST_F(Elementwise, SeedMulAddTyped) {
  EKernel k;
  ASSERT_CH_OK(ch_elementwise_kernel_new(k.out(), "float32 x, float32 y, float32 z", "float32 w",
                                         "w = x * y + z", "muladd_fwd"));
  auto xv = wave(6, 0.1), yv = wave(6, 1.3), zv = wave(6, 2.7);
  Arr x = f32({2, 3}, xv), y = f32({2, 3}, yv), z = f32({2, 3}, zv);
  std::vector<Arr> out;
  ASSERT_CH_OK(call(k, {x, y, z}, out, 1));
  EXPECT_EQ(ch_array_dtype(out[0]), CH_FLOAT32);
  EXPECT_EQ(shape_of(out[0]), (std::vector<int64_t>{2, 3}));
  // Round to float32 the values the arrays hold before the reference.
  EXPECT_TRUE(AllClose(values(out[0]), muladd_f32(values(x), values(y), values(z)), 1e-6, 1e-6));
  // float64 arrays do not match the declared float32.
  Arr xd = f64({2, 3}, xv);
  EXPECT_CH_ERR(CH_ERR_DTYPE, call(k, {xd, y, z}, out, 1));
  EXPECT_TRUE(contains(ch_error_message(), "'x'")) << ch_error_message();
  EXPECT_TRUE(contains(ch_error_message(), "float64")) << ch_error_message();
}

TEST_F(Elementwise, SeedMulAddPlaceholderBothDtypes) {
  EKernel k;
  ASSERT_CH_OK(
      ch_elementwise_kernel_new(k.out(), "T x, T y, T z", "T w", "w = x * y + z", "muladd_fwd_t"));
  auto xv = wave(12, 0.5), yv = wave(12, 1.5), zv = wave(12, 2.5);
  std::vector<Arr> out;
  Arr x = f64({3, 4}, xv), y = f64({3, 4}, yv), z = f64({3, 4}, zv);
  ASSERT_CH_OK(call(k, {x, y, z}, out, 1));
  EXPECT_EQ(ch_array_dtype(out[0]), CH_FLOAT64);
  std::vector<double> ref(12);  // reference: float64 loop
  for (size_t j = 0; j < 12; ++j) ref[j] = xv[j] * yv[j] + zv[j];
  EXPECT_TRUE(AllClose(values(out[0]), ref, 1e-15, 1e-15));
  Arr xf = f32({3, 4}, xv), yf = f32({3, 4}, yv), zf = f32({3, 4}, zv);
  ASSERT_CH_OK(call(k, {xf, yf, zf}, out, 1));
  EXPECT_EQ(ch_array_dtype(out[0]), CH_FLOAT32);
  EXPECT_TRUE(AllClose(values(out[0]), muladd_f32(values(xf), values(yf), values(zf)), 1e-6, 1e-6));
  // Arguments sharing T must agree.
  EXPECT_CH_ERR(CH_ERR_DTYPE, call(k, {xf, y, zf}, out, 1));
  EXPECT_TRUE(contains(ch_error_message(), "placeholder T")) << ch_error_message();
  EXPECT_TRUE(contains(ch_error_message(), "'y'")) << ch_error_message();
}

TEST_F(Elementwise, SeedMulAddBackwardTwoOutputs) {
  EKernel k;
  ASSERT_CH_OK(ch_elementwise_kernel_new(k.out(), "float32 x, float32 y, float32 gw",
                                         "float32 gx, float32 gy", "gx = y * gw;\ngy = x * gw;\n",
                                         "muladd_bwd"));
  auto xv = wave(5, 0.2), yv = wave(5, 0.9), gv = wave(5, 3.1);
  Arr x = f32({5}, xv), y = f32({5}, yv), gw = f32({5}, gv);
  std::vector<Arr> out;
  ASSERT_CH_OK(call(k, {x, y, gw}, out, 2));
  auto X = values(x), Y = values(y), G = values(gw);
  std::vector<double> rx(5), ry(5);  // reference: float32 products
  for (size_t j = 0; j < 5; ++j) {
    rx[j] = static_cast<float>(static_cast<float>(Y[j]) * static_cast<float>(G[j]));
    ry[j] = static_cast<float>(static_cast<float>(X[j]) * static_cast<float>(G[j]));
  }
  EXPECT_TRUE(AllClose(values(out[0]), rx, 0, 1e-6));
  EXPECT_TRUE(AllClose(values(out[1]), ry, 0, 1e-6));
}

TEST_F(Elementwise, Broadcasting) {
  EKernel k;
  ASSERT_CH_OK(
      ch_elementwise_kernel_new(k.out(), "T x, T y, T z", "T w", "w = x * y + z", "bmuladd"));
  // x (2, 1, 3), y (4, 1), z () -> (2, 4, 3): general, general and scalar access.
  auto xv = wave(6, 0.3), yv = wave(4, 1.1);
  Arr x = f64({2, 1, 3}, xv), y = f64({4, 1}, yv), z = f64({}, {0.25});
  std::vector<Arr> out;
  ASSERT_CH_OK(call(k, {x, y, z}, out, 1));
  EXPECT_EQ(shape_of(out[0]), (std::vector<int64_t>{2, 4, 3}));
  std::vector<double> ref;  // reference: NumPy broadcasting written as loops
  for (int a = 0; a < 2; ++a)
    for (int b = 0; b < 4; ++b)
      for (int c = 0; c < 3; ++c) ref.push_back(xv[a * 3 + c] * yv[b] + 0.25);
  EXPECT_TRUE(AllClose(values(out[0]), ref, 1e-15, 1e-15));
  // Shapes that do not broadcast.
  Arr bad = f64({5}, wave(5, 0));
  EXPECT_CH_ERR(CH_ERR_SHAPE, call(k, {x, bad, z}, out, 1));
  EXPECT_TRUE(contains(ch_error_message(), "(5,)")) << ch_error_message();
}

TEST_F(Elementwise, GivenOutputsAndRawInput) {
  EKernel k;
  // y = x reversed (raw input indexed by the user) plus an offset.
  ASSERT_CH_OK(ch_elementwise_kernel_new(k.out(), "raw T x, T off", "T y", "y = x[5 - 1 - i] + off",
                                         "reverse_add"));
  auto xv = wave(5, 0.7);
  Arr x = f64({5}, xv), off = f64({5}, {1, 2, 3, 4, 5});
  Arr y = full(CH_FLOAT64, {5}, -1.0);
  ch_array* outs[1] = {y.get()};
  ASSERT_CH_OK(ch_elementwise_kernel_call(k, std::vector<ch_array*>{x, off}.data(), 2, outs, 1));
  EXPECT_EQ(outs[0], y.get());  // a given output stays the caller's handle
  std::vector<double> ref(5);   // reference: reversed x + offsets
  for (int j = 0; j < 5; ++j) ref[j] = xv[4 - j] + (j + 1);
  EXPECT_TRUE(AllClose(values(y), ref, 1e-15, 1e-15));
  // A given output of the wrong shape or dtype.
  Arr y_bad = full(CH_FLOAT64, {4}, 0.0);
  outs[0] = y_bad.get();
  EXPECT_CH_ERR(CH_ERR_SHAPE,
                ch_elementwise_kernel_call(k, std::vector<ch_array*>{x, off}.data(), 2, outs, 1));
  Arr y_f32 = full(CH_FLOAT32, {5}, 0.0);
  outs[0] = y_f32.get();
  EXPECT_CH_ERR(CH_ERR_DTYPE,
                ch_elementwise_kernel_call(k, std::vector<ch_array*>{x, off}.data(), 2, outs, 1));
}

TEST_F(Elementwise, OutputPlaceholderFromGivenOutput) {
  EKernel k;
  ASSERT_CH_OK(
      ch_elementwise_kernel_new(k.out(), "float64 x", "U y", "y = (U)(x * 2)", "cast_out"));
  Arr x = f64({3}, {1.25, -2.5, 3.75});
  std::vector<Arr> out;
  EXPECT_CH_ERR(CH_ERR_INVALID_ARGUMENT, call(k, {x}, out, 1));
  EXPECT_TRUE(contains(ch_error_message(), "placeholder U")) << ch_error_message();
  Arr y = full(CH_INT32, {3}, 0.0);
  ch_array* outs[1] = {y.get()};
  ch_array* ins[1] = {x.get()};
  ASSERT_CH_OK(ch_elementwise_kernel_call(k, ins, 1, outs, 1));
  // Reference: C conversion to int truncates toward zero.
  EXPECT_EQ(values(y), (std::vector<double>{2, -5, 7}));
}

TEST_F(Elementwise, MathFunctionsAndIndex) {
  EKernel k;
  ASSERT_CH_OK(ch_elementwise_kernel_new(
      k.out(), "float64 x, float32 f", "float64 y, float32 g, int32 n",
      "y = tanh(x) + exp(x) * sqrt(fabs(x)) - pow(fabs(x), 1.5) + log1p(fabs(x)) + max(x, 0.0);\n"
      "g = expf(f) + logf(fabsf(f) + 1.0f) + fmaxf(f, 0.5f);\n"
      "n = (int)i * 2 + (isnan(x) ? 100 : 0);",
      "mathy"));
  auto xv = wave(7, 0.4, 2.0), fv = wave(7, 1.4, 2.0);
  Arr x = f64({7}, xv), f = f32({7}, fv);
  std::vector<Arr> out;
  ASSERT_CH_OK(call(k, {x, f}, out, 3));
  auto F = values(f);
  std::vector<double> ry, rg, rn;  // reference: <cmath> in the same precision
  for (int j = 0; j < 7; ++j) {
    double a = xv[j];
    ry.push_back(std::tanh(a) + std::exp(a) * std::sqrt(std::fabs(a)) -
                 std::pow(std::fabs(a), 1.5) + std::log1p(std::fabs(a)) + std::max(a, 0.0));
    float b = static_cast<float>(F[j]);
    rg.push_back(std::exp(b) + std::log(std::fabs(b) + 1.0f) + std::fmax(b, 0.5f));
    rn.push_back(2.0 * j);
  }
  EXPECT_TRUE(AllClose(values(out[0]), ry, 1e-14, 1e-14));
  EXPECT_TRUE(AllClose(values(out[1]), rg, 1e-6, 1e-6));
  EXPECT_EQ(values(out[2]), rn);
}

TEST_F(Elementwise, LargeArrayRunsInParallelChunks) {
  EKernel k;
  ASSERT_CH_OK(ch_elementwise_kernel_new(k.out(), "T x", "T y", "y = x * 3 + (T)(i % 7)", "big"));
  const size_t n = 300000;  // above the parallel grain
  auto xv = wave(n, 0.0);
  Arr x = f64({static_cast<int64_t>(n)}, xv);
  std::vector<Arr> out;
  ASSERT_CH_OK(call(k, {x}, out, 1));
  std::vector<double> ref(n);  // reference: the same formula in a loop
  for (size_t j = 0; j < n; ++j) ref[j] = xv[j] * 3 + static_cast<double>(j % 7);
  EXPECT_TRUE(AllClose(values(out[0]), ref, 1e-14, 1e-14));
}

TEST_F(Elementwise, EmptyArrays) {
  EKernel k;
  ASSERT_CH_OK(ch_elementwise_kernel_new(k.out(), "T x", "T y", "y = x + 1", "empty_ok"));
  Arr x = f32({0, 3}, {});
  std::vector<Arr> out;
  ASSERT_CH_OK(call(k, {x}, out, 1));
  EXPECT_EQ(shape_of(out[0]), (std::vector<int64_t>{0, 3}));
}

TEST_F(Elementwise, SyntaxErrorCarriesCompilerLogAndLibraryKeepsWorking) {
  EKernel bad;
  ASSERT_CH_OK(ch_elementwise_kernel_new(bad.out(), "T x", "T y", "y = x * ;", "broken_kernel"));
  Arr x = f32({3}, {1, 2, 3});
  std::vector<Arr> out;
  EXPECT_CH_ERR(CH_ERR_INVALID_ARGUMENT, call(bad, {x}, out, 1));
  std::string msg = ch_error_message();
  EXPECT_TRUE(contains(msg, "broken_kernel")) << msg;
  EXPECT_TRUE(contains(msg, "error")) << msg;  // tcc's log: "broken_kernel:1: error: ..."
  EXPECT_EQ(out[0].get(), nullptr);
  // Again (cached failure), then an unknown identifier, then a good kernel.
  EXPECT_CH_ERR(CH_ERR_INVALID_ARGUMENT, call(bad, {x}, out, 1));
  EKernel undeclared;
  ASSERT_CH_OK(
      ch_elementwise_kernel_new(undeclared.out(), "T x", "T y", "y = x * zz", "undeclared"));
  EXPECT_CH_ERR(CH_ERR_INVALID_ARGUMENT, call(undeclared, {x}, out, 1));
  EXPECT_TRUE(contains(ch_error_message(), "zz")) << ch_error_message();
  EKernel good;
  ASSERT_CH_OK(ch_elementwise_kernel_new(good.out(), "T x", "T y", "y = x * 2", "good_after_bad"));
  ASSERT_CH_OK(call(good, {x}, out, 1));
  EXPECT_EQ(values(out[0]), (std::vector<double>{2, 4, 6}));
}

TEST_F(Elementwise, BadParameters) {
  EKernel k;
  EXPECT_CH_ERR(CH_ERR_INVALID_ARGUMENT,
                ch_elementwise_kernel_new(k.out(), "float16 x", "float32 y", "y = x", "k1"));
  EXPECT_TRUE(contains(ch_error_message(), "float16")) << ch_error_message();
  EXPECT_EQ(k.get(), nullptr);
  EXPECT_CH_ERR(CH_ERR_INVALID_ARGUMENT, ch_elementwise_kernel_new(k.out(), "float32 x, float32 x",
                                                                   "float32 y", "y = x", "k2"));
  EXPECT_TRUE(contains(ch_error_message(), "'x'")) << ch_error_message();
  EXPECT_CH_ERR(CH_ERR_INVALID_ARGUMENT,
                ch_elementwise_kernel_new(k.out(), "float32 x", "float32 x", "x = x", "k3"));
  EXPECT_CH_ERR(CH_ERR_INVALID_ARGUMENT,
                ch_elementwise_kernel_new(k.out(), "x", "float32 y", "y = 1", "k4"));
  EXPECT_TRUE(contains(ch_error_message(), "'x'")) << ch_error_message();
  EXPECT_CH_ERR(CH_ERR_INVALID_ARGUMENT,
                ch_elementwise_kernel_new(k.out(), "float32 i", "float32 y", "y = i", "k5"));
  EXPECT_CH_ERR(CH_ERR_INVALID_ARGUMENT,
                ch_elementwise_kernel_new(k.out(), "float32 x", "float32 y", "y = x", "1bad name"));
  EXPECT_TRUE(contains(ch_error_message(), "1bad name")) << ch_error_message();
  EXPECT_CH_ERR(CH_ERR_INVALID_ARGUMENT,
                ch_elementwise_kernel_new(k.out(), "float32 x", "", "", "k6"));
  EXPECT_CH_ERR(CH_ERR_INVALID_ARGUMENT,
                ch_elementwise_kernel_new(k.out(), "float32 x", "raw float32 y", "y[0] = x", "k7"));
  EXPECT_CH_ERR(CH_ERR_INVALID_ARGUMENT,
                ch_elementwise_kernel_new(k.out(), "float32 x", nullptr, "y = x", "k8"));
  EXPECT_CH_ERR(CH_ERR_INVALID_ARGUMENT,
                ch_elementwise_kernel_new(nullptr, "float32 x", "float32 y", "y = x", "k9"));
  // Wrong argument counts and handles.
  ASSERT_CH_OK(ch_elementwise_kernel_new(k.out(), "T x, T y", "T z", "z = x + y", "add2"));
  Arr a = f32({2}, {1, 2});
  std::vector<Arr> out;
  EXPECT_CH_ERR(CH_ERR_INVALID_ARGUMENT, call(k, {a}, out, 1));
  EXPECT_TRUE(contains(ch_error_message(), "takes 2 input")) << ch_error_message();
  EXPECT_CH_ERR(CH_ERR_INVALID_ARGUMENT, call(k, {a, a}, out, 2));
  EXPECT_TRUE(contains(ch_error_message(), "n_outputs is 2")) << ch_error_message();
  EXPECT_CH_ERR(CH_ERR_INVALID_ARGUMENT, call(k, {a, a}, out, 0));
  EXPECT_CH_ERR(CH_ERR_NULL_HANDLE, call(k, {a, nullptr}, out, 1));
  EXPECT_CH_ERR(CH_ERR_NULL_HANDLE, call(nullptr, {a, a}, out, 1));
  // Retain and release.
  EXPECT_EQ(ch_elementwise_kernel_retain(k.get()), k.get());
  EXPECT_CH_OK(ch_elementwise_kernel_release(k.get()));
  EXPECT_CH_OK(ch_elementwise_kernel_release(nullptr));
}

// The prelude's one contract (prelude_contract.h; test_nvrtc.cpp checks the
// same table against NVRTC): accepted bodies compile and run, refused ones are
// compile errors on the CPU as on CUDA.
TEST_F(Elementwise, PreludeContractIsTheGpusOne) {
  for (const prelude_contract::Case& c : prelude_contract::kCases) {
    EKernel k;
    ASSERT_CH_OK(ch_elementwise_kernel_new(k.out(), c.in_params, c.out_params, c.body, c.name));
    const bool int_in = std::string(c.in_params).rfind("int32", 0) == 0;
    const bool f64_in = std::string(c.in_params).rfind("float64", 0) == 0;
    Arr x = int_in   ? make_array(CH_INT32, {3}, {-3, 0, 7})
            : f64_in ? f64({3}, {-2.5, 0.25, 7})
                     : f32({3}, {-2.5, 0.25, 7});
    std::vector<Arr> out;
    ch_status st = call(k, {x}, out, 1);
    if (c.accepted)
      EXPECT_EQ(st, CH_OK) << c.name << ": " << ch_error_message();
    else
      EXPECT_EQ(st, CH_ERR_INVALID_ARGUMENT) << c.name << " must be refused as NVRTC refuses it";
  }
}

TEST_F(Elementwise, AbsKeepsTheArgumentsType) {
  // The C prelude once declared only int abs(int): abs(-2.5f) was 2.
  EKernel k;
  ASSERT_CH_OK(ch_elementwise_kernel_new(k.out(), "T x", "T y", "y = abs(x)", "abs_t"));
  std::vector<Arr> out;
  Arr x = f32({3}, {-2.5, 0.25, -7.75});
  ASSERT_CH_OK(call(k, {x}, out, 1));
  EXPECT_EQ(values(out[0]), (std::vector<double>{2.5, 0.25, 7.75}));
  Arr xd = f64({2}, {-1e-300, -3.5});
  ASSERT_CH_OK(call(k, {xd}, out, 1));
  EXPECT_EQ(values(out[0]), (std::vector<double>{1e-300, 3.5}));
}

TEST_F(Elementwise, KernelNamedLikeAMathFunctionIsRefusedAtCreation) {
  for (const char* name : {"exp", "expf", "sqrt", "max", "rsqrtf", "isnan", "ch_kernel"}) {
    EKernel k;
    EXPECT_CH_ERR(CH_ERR_INVALID_ARGUMENT,
                  ch_elementwise_kernel_new(k.out(), "T x", "T y", "y = x", name));
    EXPECT_TRUE(contains(ch_error_message(), std::string("'") + name + "'")) << ch_error_message();
    EXPECT_TRUE(contains(ch_error_message(), "math or library function")) << ch_error_message();
  }
  EKernel ok;
  ASSERT_CH_OK(ch_elementwise_kernel_new(ok.out(), "T x", "T y", "y = x", "exp_kernel"));
}

}  // namespace
