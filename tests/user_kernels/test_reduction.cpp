// ch_reduction_kernel on the CPU through the C API: sum of squares, max with
// and without identity, mean through post_map_expr and _reduce_size, a dot
// product of two inputs, axes (dense and strided), keepdims, broadcasting,
// and errors. References are plain loops in the test (float64).
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "kernel_test_util.h"

using namespace capi_test;
using namespace kernel_test;

namespace {

class Reduction : public CapiTest {
 protected:
  void SetUp() override {
    CapiTest::SetUp();
    if (!ch_kernel_cpu_supported())
      GTEST_SKIP() << "this build has no CPU kernel compiler (libtcc)";
  }
};

// x of shape (2, 3, 4): element (a, b, c) at a * 12 + b * 4 + c.
std::vector<double> x234() { return wave(24, 0.6, 3.0); }

TEST_F(Reduction, SumOfSquaresAllAxes) {
  RKernel k;
  ASSERT_CH_OK(ch_reduction_kernel_new(k.out(), "T x", "T y", "x * x", "a + b", "y = a", "0",
                                       "sum_sq", nullptr));
  auto xv = x234();
  Arr x = f64({2, 3, 4}, xv);
  std::vector<Arr> out;
  ASSERT_CH_OK(reduce(k, {x}, out, 1, nullptr));
  EXPECT_EQ(shape_of(out[0]), (std::vector<int64_t>{}));
  double ref = 0;  // reference: loop
  for (double v : xv) ref += v * v;
  EXPECT_TRUE(AllClose(values(out[0]), {ref}, 1e-12, 1e-12));
  // float32 too, accumulating in float32 (the output type).
  Arr xf = f32({2, 3, 4}, xv);
  ASSERT_CH_OK(reduce(k, {xf}, out, 1, nullptr));
  EXPECT_EQ(ch_array_dtype(out[0]), CH_FLOAT32);
  EXPECT_TRUE(AllClose(values(out[0]), {ref}, 1e-4, 1e-5));
}

TEST_F(Reduction, AxesKeepdimsAndStridedAccess) {
  RKernel k;
  ASSERT_CH_OK(ch_reduction_kernel_new(k.out(), "T x", "T y", "x * x", "a + b", "", "0",
                                       "sum_sq_ax", nullptr));
  auto xv = x234();
  Arr x = f64({2, 3, 4}, xv);
  std::vector<Arr> out;
  auto at = [&](int a, int b, int c) { return xv[a * 12 + b * 4 + c]; };
  {  // axis -1: contiguous slices
    std::vector<int32_t> axes{-1};
    ASSERT_CH_OK(reduce(k, {x}, out, 1, &axes));
    EXPECT_EQ(shape_of(out[0]), (std::vector<int64_t>{2, 3}));
    std::vector<double> ref;
    for (int a = 0; a < 2; ++a)
      for (int b = 0; b < 3; ++b) {
        double s = 0;
        for (int c = 0; c < 4; ++c) s += at(a, b, c) * at(a, b, c);
        ref.push_back(s);
      }
    EXPECT_TRUE(AllClose(values(out[0]), ref, 1e-12, 1e-12));
  }
  {  // axis 1 with keepdims: strided slices
    std::vector<int32_t> axes{1};
    ASSERT_CH_OK(reduce(k, {x}, out, 1, &axes, true));
    EXPECT_EQ(shape_of(out[0]), (std::vector<int64_t>{2, 1, 4}));
    std::vector<double> ref;
    for (int a = 0; a < 2; ++a)
      for (int c = 0; c < 4; ++c) {
        double s = 0;
        for (int b = 0; b < 3; ++b) s += at(a, b, c) * at(a, b, c);
        ref.push_back(s);
      }
    EXPECT_TRUE(AllClose(values(out[0]), ref, 1e-12, 1e-12));
  }
  {  // axes (0, 2): not one constant stride (general index arithmetic)
    std::vector<int32_t> axes{0, 2};
    ASSERT_CH_OK(reduce(k, {x}, out, 1, &axes));
    EXPECT_EQ(shape_of(out[0]), (std::vector<int64_t>{3}));
    std::vector<double> ref;
    for (int b = 0; b < 3; ++b) {
      double s = 0;
      for (int a = 0; a < 2; ++a)
        for (int c = 0; c < 4; ++c) s += at(a, b, c) * at(a, b, c);
      ref.push_back(s);
    }
    EXPECT_TRUE(AllClose(values(out[0]), ref, 1e-12, 1e-12));
  }
  {  // no axes: the map alone
    std::vector<int32_t> axes;
    ASSERT_CH_OK(reduce(k, {x}, out, 1, &axes));
    std::vector<double> ref;
    for (double v : xv) ref.push_back(v * v);
    EXPECT_TRUE(AllClose(values(out[0]), ref, 1e-12, 1e-12));
  }
  std::vector<int32_t> bad{3};
  EXPECT_CH_ERR(CH_ERR_INVALID_ARGUMENT, reduce(k, {x}, out, 1, &bad));
  EXPECT_TRUE(contains(ch_error_message(), "axis 3")) << ch_error_message();
  std::vector<int32_t> twice{1, -2};
  EXPECT_CH_ERR(CH_ERR_INVALID_ARGUMENT, reduce(k, {x}, out, 1, &twice));
}

TEST_F(Reduction, MaxWithAndWithoutIdentity) {
  RKernel with_id, without_id;
  ASSERT_CH_OK(ch_reduction_kernel_new(with_id.out(), "T x", "T y", "x", "max(a, b)", "y = a",
                                       "-INFINITY", "max_id", nullptr));
  ASSERT_CH_OK(ch_reduction_kernel_new(without_id.out(), "T x", "T y", "x", "max(a, b)", "y = a",
                                       nullptr, "max_noid", nullptr));
  auto xv = x234();
  for (ch_dtype dt : {CH_FLOAT32, CH_FLOAT64}) {
    Arr x = make_array(dt, {6, 4}, xv);
    auto X = values(x);
    std::vector<double> ref;  // reference: loop max over axis 1
    for (int r = 0; r < 6; ++r)
      ref.push_back(*std::max_element(X.begin() + r * 4, X.begin() + r * 4 + 4));
    std::vector<int32_t> axes{1};
    std::vector<Arr> out;
    ASSERT_CH_OK(reduce(with_id, {x}, out, 1, &axes));
    EXPECT_EQ(values(out[0]), ref);
    ASSERT_CH_OK(reduce(without_id, {x}, out, 1, &axes));
    EXPECT_EQ(values(out[0]), ref);
  }
  // Reducing zero elements: the identity, or an error without one.
  Arr empty = f64({3, 0}, {});
  std::vector<int32_t> axes{1};
  std::vector<Arr> out;
  ASSERT_CH_OK(reduce(with_id, {empty}, out, 1, &axes));
  auto v = values(out[0]);
  ASSERT_EQ(v.size(), 3u);
  EXPECT_TRUE(std::isinf(v[0]) && v[0] < 0);
  EXPECT_CH_ERR(CH_ERR_SHAPE, reduce(without_id, {empty}, out, 1, &axes));
}

TEST_F(Reduction, MeanDotAndBroadcast) {
  RKernel mean, dot;
  ASSERT_CH_OK(ch_reduction_kernel_new(mean.out(), "T x", "T y", "x", "a + b",
                                       "y = a / _reduce_size", "0", "mean_k", nullptr));
  ASSERT_CH_OK(ch_reduction_kernel_new(dot.out(), "T x, T w", "T y, float64 norm", "x * w", "a + b",
                                       "y = a; norm = sqrt((double)(a * a))", "0", "dot_k",
                                       "float64"));
  auto xv = wave(12, 0.2), wv = wave(4, 1.7);
  Arr x = f64({3, 4}, xv), w = f64({4}, wv);
  std::vector<int32_t> axes{-1};
  std::vector<Arr> out;
  ASSERT_CH_OK(reduce(mean, {x}, out, 1, &axes));
  std::vector<double> rm, rd, rn;  // reference: loops
  for (int r = 0; r < 3; ++r) {
    double s = 0, d = 0;
    for (int c = 0; c < 4; ++c) {
      s += xv[r * 4 + c];
      d += xv[r * 4 + c] * wv[c];
    }
    rm.push_back(s / 4);
    rd.push_back(d);
    rn.push_back(std::fabs(d));
  }
  EXPECT_TRUE(AllClose(values(out[0]), rm, 1e-14, 1e-14));
  // w (4,) broadcasts against x (3, 4).
  ASSERT_CH_OK(reduce(dot, {x, w}, out, 2, &axes));
  EXPECT_TRUE(AllClose(values(out[0]), rd, 1e-14, 1e-14));
  EXPECT_TRUE(AllClose(values(out[1]), rn, 1e-14, 1e-14));
  // Given output of the wrong shape.
  Arr y_bad = full(CH_FLOAT64, {4}, 0.0);
  ch_array* outs[1] = {y_bad.get()};
  ch_array* ins[1] = {x.get()};
  EXPECT_CH_ERR(CH_ERR_SHAPE, ch_reduction_kernel_call(mean, ins, 1, outs, 1, axes.data(), 1, 0));
  EXPECT_TRUE(contains(ch_error_message(), "(3,)")) << ch_error_message();
}

TEST_F(Reduction, LargeReductionParallelOverOutputs) {
  RKernel k;
  ASSERT_CH_OK(ch_reduction_kernel_new(k.out(), "T x", "T y", "x", "a + b", "y = a", "0", "rowsum",
                                       nullptr));
  const int rows = 2000, cols = 300;
  auto xv = wave(static_cast<size_t>(rows) * cols, 0.0);
  Arr x = f64({rows, cols}, xv);
  std::vector<int32_t> axes{1};
  std::vector<Arr> out;
  ASSERT_CH_OK(reduce(k, {x}, out, 1, &axes));
  std::vector<double> ref(rows, 0.0);  // reference: loop
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c) ref[r] += xv[static_cast<size_t>(r) * cols + c];
  EXPECT_TRUE(AllClose(values(out[0]), ref, 1e-12, 1e-12));
}

TEST_F(Reduction, ErrorsAndCompileLog) {
  RKernel k;
  EXPECT_CH_ERR(CH_ERR_INVALID_ARGUMENT, ch_reduction_kernel_new(k.out(), "T x", "T y", "", "a + b",
                                                                 "y = a", "0", "r1", nullptr));
  EXPECT_CH_ERR(CH_ERR_INVALID_ARGUMENT, ch_reduction_kernel_new(k.out(), "T x", "T y, T z", "x",
                                                                 "a + b", "", "0", "r2", nullptr));
  EXPECT_CH_ERR(
      CH_ERR_INVALID_ARGUMENT,
      ch_reduction_kernel_new(k.out(), "T x", "T y", "x", "a + b", "y = a", "0", "r3", "half"));
  EXPECT_TRUE(contains(ch_error_message(), "half")) << ch_error_message();
  ASSERT_CH_OK(ch_reduction_kernel_new(k.out(), "T x", "T y", "x", "a +* b", "y = a", "0",
                                       "bad_reduce", nullptr));
  Arr x = f32({4}, {1, 2, 3, 4});
  std::vector<Arr> out;
  EXPECT_CH_ERR(CH_ERR_INVALID_ARGUMENT, reduce(k, {x}, out, 1, nullptr));
  EXPECT_TRUE(contains(ch_error_message(), "bad_reduce")) << ch_error_message();
  EXPECT_CH_ERR(CH_ERR_INVALID_ARGUMENT, reduce(k, {x, x}, out, 1, nullptr));
  EXPECT_CH_OK(ch_reduction_kernel_release(nullptr));
}

}  // namespace
