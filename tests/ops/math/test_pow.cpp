// pow_scalar (x ** p) and rpow_scalar (s ** x). Bases are kept in [0.5, 2)
// for x ** p and s > 0 for s ** x by the references.
#include "op_test_util.h"

namespace {

using namespace optest;

ch_status apply_pow_scalar(ch_variable** out, ch_variable* const* in, const ref::Case& c) {
  return ch_functions_pow_scalar(out, in[0], c.scalar);
}
ch_status apply_rpow_scalar(ch_variable** out, ch_variable* const* in, const ref::Case& c) {
  return ch_functions_rpow_scalar(out, in[0], c.scalar);
}

OPTEST_REFERENCE_SUITE(PowScalar, ref::pow_scalar_cases, apply_pow_scalar);
OPTEST_REFERENCE_SUITE(RPowScalar, ref::rpow_scalar_cases, apply_rpow_scalar);

using PowTest = OpTest;

TEST_F(PowTest, CreatorNames) {
  Var x = make_var(CH_FLOAT64, {2}, {1, 2});
  Var y, z;
  ASSERT_EQ(ch_functions_pow_scalar(y.out(), x.get(), 3), CH_OK);
  ASSERT_EQ(ch_functions_rpow_scalar(z.out(), x.get(), 3), CH_OK);
  EXPECT_EQ(creator_name(y), "PowScalar");
  EXPECT_EQ(creator_name(z), "RPowScalar");
}

// Exact small cases: x ** 2 (the special-cased square), x ** 0, 2 ** x; negative
// bases with an integer exponent as NumPy (-2.0 ** 3 = -8).
TEST_F(PowTest, ExactValues) {
  Var x = make_var(CH_FLOAT64, {4}, {-2, -1, 0.5, 3});
  Var sq, cube, zero, two;
  ASSERT_EQ(ch_functions_pow_scalar(sq.out(), x.get(), 2), CH_OK);
  ASSERT_EQ(ch_functions_pow_scalar(cube.out(), x.get(), 3), CH_OK);
  ASSERT_EQ(ch_functions_pow_scalar(zero.out(), x.get(), 0), CH_OK);
  ASSERT_EQ(ch_functions_rpow_scalar(two.out(), x.get(), 2), CH_OK);
  EXPECT_TRUE(all_equal(data_of(sq), CH_FLOAT64, {4}, {4, 1, 0.25, 9}));
  EXPECT_TRUE(all_equal(data_of(cube), CH_FLOAT64, {4}, {-8, -1, 0.125, 27}));
  EXPECT_TRUE(all_equal(data_of(zero), CH_FLOAT64, {4}, {1, 1, 1, 1}));
  EXPECT_TRUE(
      all_close(data_of(two), CH_FLOAT64, {4}, {0.25, 0.5, std::sqrt(2.0), 8}, Tol{0, 1e-15}));
  backward(cube, make_array(CH_FLOAT64, {4}, {1, 1, 1, 1}));
  EXPECT_TRUE(all_equal(grad_of(x), CH_FLOAT64, {4}, {12, 3, 0.75, 27}));  // 3 x^2
}

TEST_F(PowTest, Int32Rejected) {
  Var i = make_var(iota(CH_INT32, {3}));
  Var f = make_var(iota(CH_FLOAT32, {3}));
  Var y;
  EXPECT_TRUE(fails_with(ch_functions_pow_scalar(y.out(), i.get(), 2), CH_ERR_DTYPE, {"int32"}));
  EXPECT_TRUE(fails_with(ch_functions_rpow_scalar(y.out(), i.get(), 2), CH_ERR_DTYPE, {"int32"}));
  EXPECT_FALSE(y);
  ASSERT_EQ(ch_functions_pow_scalar(y.out(), f.get(), 2), CH_OK) << ch_error_message();
  EXPECT_TRUE(all_equal(data_of(y), CH_FLOAT32, {3}, {0.25, 2.25, 6.25}));
}

}  // namespace
