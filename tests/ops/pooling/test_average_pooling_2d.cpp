// average_pooling_2d: forward and gradients against NumPy (direct window
// loops), numerical gradient checks, padding counted as zeros, bad inputs.
#include "conv_test_util.h"
#include "pooling/average_pooling_2d_references.h"

namespace {

using namespace optest;
using namespace convtest;

ch_status apply_pool(const ref_avgpool::Case& c, ch_variable* x, ch_variable** out) {
  return ch_functions_average_pooling_2d(out, x, c.kh, c.kw, c.sy, c.sx, c.ph, c.pw);
}

class AvgPool2DRef : public LeakChecked<::testing::TestWithParam<ref_avgpool::Case>> {};

TEST_P(AvgPool2DRef, Forward) {
  const ref_avgpool::Case& c = GetParam();
  Array x = make_array(c.dtype, c.x);
  Var vx = make_var(x), y;
  ASSERT_EQ(apply_pool(c, vx.get(), y.out()), CH_OK) << ch_error_message();
  EXPECT_TRUE(all_close(data_of(y).get(), c.dtype, c.y, fwd_tol(c.dtype)));
  EXPECT_TRUE(all_close(x.get(), c.dtype, c.x, Tol{0, 0})) << "x changed";
  EXPECT_EQ(creator_name(y), "AveragePooling2D");
}

TEST_P(AvgPool2DRef, Backward) {
  const ref_avgpool::Case& c = GetParam();
  Var x = make_var(make_array(c.dtype, c.x)), y;
  ASSERT_EQ(apply_pool(c, x.get(), y.out()), CH_OK) << ch_error_message();
  Array gy = make_array(c.dtype, c.gy);
  for (int pass = 0; pass < 2; ++pass) {
    backward(y, gy);
    EXPECT_TRUE(all_close(grad_of(x).get(), c.dtype, c.gx, bwd_tol(c.dtype))) << "pass " << pass;
  }
}

TEST_P(AvgPool2DRef, CheckBackward) {
  const ref_avgpool::Case& c = GetParam();
  Array x = make_array(c.dtype, c.x), gy = make_array(c.dtype, c.gy);
  Build build = [&c](ch_variable* const* in, size_t, ch_variable** out) {
    return apply_pool(c, in[0], out);
  };
  EXPECT_EQ(check_backward(build, {&x}, &gy, check_tol(c.dtype)), CH_OK) << ch_error_message();
}

INSTANTIATE_TEST_SUITE_P(NumPy, AvgPool2DRef, ::testing::ValuesIn(ref_avgpool::cases),
                         [](const ::testing::TestParamInfo<ref_avgpool::Case>& i) {
                           return std::string(i.param.name);
                         });

using AvgPool2DTest = OpTest;

// Chainer 1.0.1 divides by kh * kw even where the window covers padding;
// stride 0 means stride = ksize.
TEST_F(AvgPool2DTest, PaddingCountsAsZero) {
  Var x = make_var(CH_FLOAT64, {1, 1, 2, 2}, {1, 2, 3, 4}), y;
  ASSERT_EQ(ch_functions_average_pooling_2d(y.out(), x.get(), 2, 2, 0, 0, 1, 1), CH_OK);
  EXPECT_TRUE(all_equal(data_of(y), CH_FLOAT64, {1, 1, 2, 2}, {0.25, 0.5, 0.75, 1.0}));
  backward(y, make_array(CH_FLOAT64, {1, 1, 2, 2}, {4, 8, 12, 16}));
  EXPECT_TRUE(all_equal(grad_of(x), CH_FLOAT64, {1, 1, 2, 2}, {1, 2, 3, 4}));
}

TEST_F(AvgPool2DTest, BadInputs) {
  Var y;
  Var r5 = make_var(iota(CH_FLOAT32, {1, 1, 1, 4, 4}));
  EXPECT_TRUE(fails_with(ch_functions_average_pooling_2d(y.out(), r5.get(), 2, 2, 0, 0, 0, 0),
                         CH_ERR_SHAPE, {"4-d", "(1, 1, 1, 4, 4)"}));
  Var i32 = make_var(iota(CH_INT32, {1, 1, 4, 4}));
  EXPECT_TRUE(fails_with(ch_functions_average_pooling_2d(y.out(), i32.get(), 2, 2, 0, 0, 0, 0),
                         CH_ERR_DTYPE, {"int32"}));
  Var x = make_var(iota(CH_FLOAT64, {1, 1, 4, 4}));
  EXPECT_TRUE(fails_with(ch_functions_average_pooling_2d(y.out(), x.get(), 2, -1, 0, 0, 0, 0),
                         CH_ERR_INVALID_ARGUMENT, {"ksize (2, -1)"}));
  EXPECT_TRUE(fails_with(ch_functions_average_pooling_2d(y.out(), x.get(), 2, 2, 0, 0, -2, 0),
                         CH_ERR_INVALID_ARGUMENT, {"pad (-2, 0)"}));
  EXPECT_TRUE(fails_with(ch_functions_average_pooling_2d(y.out(), x.get(), 2, 7, 0, 0, 1, 1),
                         CH_ERR_SHAPE, {"2x7", "4x4"}));
  EXPECT_FALSE(y);
}

}  // namespace
