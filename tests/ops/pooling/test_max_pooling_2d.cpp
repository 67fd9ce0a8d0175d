// max_pooling_2d: forward and gradients against NumPy (direct window loops),
// numerical gradient checks, windows wholly in the padding, bad inputs.
#include <cmath>

#include "conv_test_util.h"
#include "pooling/max_pooling_2d_references.h"

namespace {

using namespace optest;
using namespace convtest;

ch_status apply_pool(const ref_maxpool::Case& c, ch_variable* x, ch_variable** out) {
  return ch_functions_max_pooling_2d(out, x, c.kh, c.kw, c.sy, c.sx, c.ph, c.pw,
                                     static_cast<int32_t>(c.cover_all));
}

class MaxPool2DRef : public LeakChecked<::testing::TestWithParam<ref_maxpool::Case>> {};

TEST_P(MaxPool2DRef, Forward) {
  const ref_maxpool::Case& c = GetParam();
  Array x = make_array(c.dtype, c.x);
  Var vx = make_var(x), y;
  ASSERT_EQ(apply_pool(c, vx.get(), y.out()), CH_OK) << ch_error_message();
  EXPECT_TRUE(all_close(data_of(y).get(), c.dtype, c.y, Tol{0, 0}));  // a selection: exact
  EXPECT_TRUE(all_close(x.get(), c.dtype, c.x, Tol{0, 0})) << "x changed";
  EXPECT_EQ(creator_name(y), "MaxPooling2D");
}

TEST_P(MaxPool2DRef, Backward) {
  const ref_maxpool::Case& c = GetParam();
  Var x = make_var(make_array(c.dtype, c.x)), y;
  ASSERT_EQ(apply_pool(c, x.get(), y.out()), CH_OK) << ch_error_message();
  Array gy = make_array(c.dtype, c.gy);
  for (int pass = 0; pass < 2; ++pass) {
    backward(y, gy);
    EXPECT_TRUE(all_close(grad_of(x).get(), c.dtype, c.gx, bwd_tol(c.dtype))) << "pass " << pass;
  }
}

TEST_P(MaxPool2DRef, CheckBackward) {
  const ref_maxpool::Case& c = GetParam();
  Array x = make_array(c.dtype, c.x), gy = make_array(c.dtype, c.gy);
  Build build = [&c](ch_variable* const* in, size_t, ch_variable** out) {
    return apply_pool(c, in[0], out);
  };
  EXPECT_EQ(check_backward(build, {&x}, &gy, check_tol(c.dtype)), CH_OK) << ch_error_message();
}

INSTANTIATE_TEST_SUITE_P(NumPy, MaxPool2DRef, ::testing::ValuesIn(ref_maxpool::cases),
                         [](const ::testing::TestParamInfo<ref_maxpool::Case>& i) {
                           return std::string(i.param.name);
                         });

using MaxPool2DTest = OpTest;

// stride 0 means stride = ksize; cover_all off drops the last partial window.
TEST_F(MaxPool2DTest, DefaultStrideAndCoverAll) {
  // x[0, 0] = 0..24 on a 5x5 grid: maxima are the bottom-right elements.
  std::vector<double> v(25);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>(i);
  Var x = make_var(CH_FLOAT64, {1, 1, 5, 5}, v), y, z;
  ASSERT_EQ(ch_functions_max_pooling_2d(y.out(), x.get(), 2, 2, 0, 0, 0, 0, 1), CH_OK);
  EXPECT_TRUE(all_equal(data_of(y), CH_FLOAT64, {1, 1, 3, 3}, {6, 8, 9, 16, 18, 19, 21, 23, 24}));
  ASSERT_EQ(ch_functions_max_pooling_2d(z.out(), x.get(), 2, 2, 0, 0, 0, 0, 0), CH_OK);
  EXPECT_TRUE(all_equal(data_of(z), CH_FLOAT64, {1, 1, 2, 2}, {6, 8, 16, 18}));
}

// h = 5, k = 2, s = 2, pad 1 with cover_all: the last window row lies wholly
// in the padding (Chainer pads with -inf): -inf there, no gradient.
TEST_F(MaxPool2DTest, WindowInPadding) {
  Var x = make_var(CH_FLOAT32, {1, 1, 5, 1}, {1, 2, 3, 4, 5}), y;
  ASSERT_EQ(ch_functions_max_pooling_2d(y.out(), x.get(), 2, 1, 2, 1, 1, 0, 1), CH_OK);
  EXPECT_TRUE(all_equal(data_of(y), CH_FLOAT32, {1, 1, 4, 1}, {1, 3, 5, -INFINITY}));
  backward(y, make_array(CH_FLOAT32, {1, 1, 4, 1}, {1, 2, 3, 4}));
  EXPECT_TRUE(all_equal(grad_of(x), CH_FLOAT32, {1, 1, 5, 1}, {1, 0, 2, 0, 3}));
}

// Ties go to the first maximum in window order (numpy.argmax over the
// flattened window, as Chainer 1.x's CPU kernel): on a plane of equal values
// every window's gradient lands on its top-left element, both for windows
// inside the plane (done a row of windows at a time) and for those cut by
// the padding and cover_all (done one by one).
TEST_F(MaxPool2DTest, TiesGoToTheFirstMaximumInWindowOrder) {
  Var x = make_var(CH_FLOAT64, {1, 1, 5, 6}, std::vector<double>(30, 2.0)), y;
  ASSERT_EQ(ch_functions_max_pooling_2d(y.out(), x.get(), 2, 2, 2, 2, 0, 1, 1), CH_OK);
  // Output 3x4: columns start at x = -1, 1, 3, 5 (the first and last are cut).
  EXPECT_TRUE(all_equal(data_of(y), CH_FLOAT64, {1, 1, 3, 4}, std::vector<double>(12, 2.0)));
  backward(y, make_array(CH_FLOAT64, {1, 1, 3, 4}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}));
  // Window (oy, ox) starts at row 2 oy, column max(2 ox - 1, 0).
  std::vector<double> gx(30, 0.0);
  for (int oy = 0; oy < 3; ++oy)
    for (int ox = 0; ox < 4; ++ox) gx[2 * oy * 6 + std::max(2 * ox - 1, 0)] = 1 + oy * 4 + ox;
  EXPECT_TRUE(all_equal(grad_of(x), CH_FLOAT64, {1, 1, 5, 6}, gx));
}

// A window holding a NaN gives NaN (NumPy's max over the window, as Chainer
// 1.x's CPU kernel), and its gradient goes to the window's first NaN in
// window order (numpy.argmax): here a NaN after a number, a NaN before a
// larger number and a later NaN, and a window without NaN.
TEST_F(MaxPool2DTest, NaNPropagatesAndTakesTheGradient) {
  const double nan = std::nan("");
  for (ch_dtype dt : {CH_FLOAT32, CH_FLOAT64}) {
    Var x = make_var(dt, {1, 1, 2, 6}, {1, nan, nan, 9, 4, 3, 5, 6, 2, nan, 7, 2}), y;
    ASSERT_EQ(ch_functions_max_pooling_2d(y.out(), x.get(), 2, 2, 2, 2, 0, 0, 0), CH_OK);
    const std::vector<double> v = values_of(y);
    ASSERT_EQ(v.size(), 3u);
    EXPECT_TRUE(std::isnan(v[0]));
    EXPECT_TRUE(std::isnan(v[1]));
    EXPECT_EQ(v[2], 7);
    backward(y, make_array(dt, {1, 1, 1, 3}, {1, 2, 3}));
    EXPECT_TRUE(all_equal(grad_of(x), dt, {1, 1, 2, 6}, {0, 1, 2, 0, 0, 0, 0, 0, 0, 0, 3, 0}));
  }
}

// Overlapping windows (3x3, stride 1) over a plane of equal values: each
// window's gradient goes to its own first position, so position (i, j)
// collects the gradient of output (i, j) alone.
TEST_F(MaxPool2DTest, OverlappingWindowsRouteTiesToTheirOwnFirstPosition) {
  Var x = make_var(CH_FLOAT64, {1, 1, 4, 4}, std::vector<double>(16, 1.0)), y;
  ASSERT_EQ(ch_functions_max_pooling_2d(y.out(), x.get(), 3, 3, 1, 1, 0, 0, 0), CH_OK);
  backward(y, make_array(CH_FLOAT64, {1, 1, 2, 2}, {1, 2, 3, 4}));
  EXPECT_TRUE(all_equal(grad_of(x), CH_FLOAT64, {1, 1, 4, 4},
                        {1, 2, 0, 0, 3, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}));
}

TEST_F(MaxPool2DTest, BadInputs) {
  Var y;
  Var r3 = make_var(iota(CH_FLOAT32, {2, 4, 4}));
  EXPECT_TRUE(fails_with(ch_functions_max_pooling_2d(y.out(), r3.get(), 2, 2, 0, 0, 0, 0, 1),
                         CH_ERR_SHAPE, {"4-d", "(2, 4, 4)"}));
  Var i32 = make_var(iota(CH_INT32, {1, 1, 4, 4}));
  EXPECT_TRUE(fails_with(ch_functions_max_pooling_2d(y.out(), i32.get(), 2, 2, 0, 0, 0, 0, 1),
                         CH_ERR_DTYPE, {"int32"}));
  Var x = make_var(iota(CH_FLOAT64, {1, 1, 4, 4}));
  EXPECT_TRUE(fails_with(ch_functions_max_pooling_2d(y.out(), x.get(), 0, 2, 0, 0, 0, 0, 1),
                         CH_ERR_INVALID_ARGUMENT, {"ksize (0, 2)"}));
  EXPECT_TRUE(fails_with(ch_functions_max_pooling_2d(y.out(), x.get(), 2, 2, 0, 0, 0, -1, 1),
                         CH_ERR_INVALID_ARGUMENT, {"pad (0, -1)"}));
  EXPECT_TRUE(fails_with(ch_functions_max_pooling_2d(y.out(), x.get(), 5, 2, 0, 0, 0, 0, 1),
                         CH_ERR_SHAPE, {"5x2", "4x4"}));
  EXPECT_TRUE(fails_with(ch_functions_max_pooling_2d(y.out(), nullptr, 2, 2, 0, 0, 0, 0, 1),
                         CH_ERR_NULL_HANDLE));
  EXPECT_FALSE(y);
}

}  // namespace
