// local_response_normalization: forward and gradients against NumPy (channel
// loops and the element-wise Jacobian), numerical gradient checks, seed
// defaults, bad inputs.
#include "conv_test_util.h"
#include "normalization/local_response_normalization_references.h"

namespace {

using namespace optest;
using namespace convtest;

ch_status apply_lrn(const ref_lrn::Case& c, ch_variable* x, ch_variable** out) {
  return ch_functions_local_response_normalization(out, x, static_cast<int32_t>(c.n), c.k, c.alpha,
                                                   c.beta);
}

class LRNRef : public LeakChecked<::testing::TestWithParam<ref_lrn::Case>> {};

TEST_P(LRNRef, Forward) {
  const ref_lrn::Case& c = GetParam();
  Array x = make_array(c.dtype, c.x);
  Var vx = make_var(x), y;
  ASSERT_EQ(apply_lrn(c, vx.get(), y.out()), CH_OK) << ch_error_message();
  EXPECT_TRUE(all_close(data_of(y).get(), c.dtype, c.y, fwd_tol(c.dtype)));
  EXPECT_TRUE(all_close(x.get(), c.dtype, c.x, Tol{0, 0})) << "x changed";
  EXPECT_EQ(creator_name(y), "LocalResponseNormalization");
}

TEST_P(LRNRef, Backward) {
  const ref_lrn::Case& c = GetParam();
  Var x = make_var(make_array(c.dtype, c.x)), y;
  ASSERT_EQ(apply_lrn(c, x.get(), y.out()), CH_OK) << ch_error_message();
  Array gy = make_array(c.dtype, c.gy);
  for (int pass = 0; pass < 2; ++pass) {
    backward(y, gy);
    EXPECT_TRUE(all_close(grad_of(x).get(), c.dtype, c.gx, bwd_tol(c.dtype))) << "pass " << pass;
  }
}

TEST_P(LRNRef, CheckBackward) {
  const ref_lrn::Case& c = GetParam();
  Array x = make_array(c.dtype, c.x), gy = make_array(c.dtype, c.gy);
  Build build = [&c](ch_variable* const* in, size_t, ch_variable** out) {
    return apply_lrn(c, in[0], out);
  };
  EXPECT_EQ(check_backward(build, {&x}, &gy, check_tol(c.dtype)), CH_OK) << ch_error_message();
}

INSTANTIATE_TEST_SUITE_P(NumPy, LRNRef, ::testing::ValuesIn(ref_lrn::cases),
                         [](const ::testing::TestParamInfo<ref_lrn::Case>& i) {
                           return std::string(i.param.name);
                         });

using LRNTest = OpTest;

// One channel, seed defaults (n 5, k 2, alpha 1e-4, beta 0.75): y = x / (2 + 1e-4 x^2)^0.75.
TEST_F(LRNTest, SingleChannel) {
  Var x = make_var(CH_FLOAT64, {2, 1}, {1.0, -3.0}), y;
  ASSERT_EQ(ch_functions_local_response_normalization(y.out(), x.get(), 5, 2, 1e-4, 0.75), CH_OK);
  EXPECT_TRUE(all_close(data_of(y), CH_FLOAT64, {2, 1},
                        {1.0 / std::pow(2.0001, 0.75), -3.0 / std::pow(2.0009, 0.75)},
                        Tol{1e-15, 1e-15}));
}

TEST_F(LRNTest, BadInputs) {
  Var y;
  Var r1 = make_var(iota(CH_FLOAT32, {4}));
  EXPECT_TRUE(
      fails_with(ch_functions_local_response_normalization(y.out(), r1.get(), 5, 2, 1e-4, 0.75),
                 CH_ERR_SHAPE, {"at least 2", "(4,)"}));
  Var i32 = make_var(iota(CH_INT32, {2, 3}));
  EXPECT_TRUE(
      fails_with(ch_functions_local_response_normalization(y.out(), i32.get(), 5, 2, 1e-4, 0.75),
                 CH_ERR_DTYPE, {"int32"}));
  Var x = make_var(iota(CH_FLOAT32, {2, 3}));
  EXPECT_TRUE(
      fails_with(ch_functions_local_response_normalization(y.out(), x.get(), 0, 2, 1e-4, 0.75),
                 CH_ERR_INVALID_ARGUMENT, {"n 0"}));
  EXPECT_FALSE(y);
}

}  // namespace
