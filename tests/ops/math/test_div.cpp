// div (Variable / Variable, NumPy broadcasting), div_scalar (x / s) and
// rdiv_scalar (s / x). Divisors are kept in [0.5, 2) by the references.
#include <limits>

#include "op_test_util.h"

namespace {

using namespace optest;

ch_status apply_div(ch_variable** out, ch_variable* const* in, const ref::Case&) {
  return ch_functions_div(out, in[0], in[1]);
}
ch_status apply_div_scalar(ch_variable** out, ch_variable* const* in, const ref::Case& c) {
  return ch_functions_div_scalar(out, in[0], c.scalar);
}
ch_status apply_rdiv_scalar(ch_variable** out, ch_variable* const* in, const ref::Case& c) {
  return ch_functions_rdiv_scalar(out, in[0], c.scalar);
}

OPTEST_REFERENCE_SUITE(Div, ref::div_cases, apply_div);
OPTEST_REFERENCE_SUITE(DivScalar, ref::div_scalar_cases, apply_div_scalar);
OPTEST_REFERENCE_SUITE(RDivScalar, ref::rdiv_scalar_cases, apply_rdiv_scalar);

using DivTest = OpTest;

TEST_F(DivTest, CreatorNames) {
  Var a = make_var(CH_FLOAT32, {2}, {1, 2});
  Var y, z, w;
  ASSERT_EQ(ch_functions_div(y.out(), a.get(), a.get()), CH_OK);
  ASSERT_EQ(ch_functions_div_scalar(z.out(), a.get(), 2.0), CH_OK);
  ASSERT_EQ(ch_functions_rdiv_scalar(w.out(), a.get(), 2.0), CH_OK);
  EXPECT_EQ(creator_name(y), "Div");
  EXPECT_EQ(creator_name(z), "DivScalar");
  EXPECT_EQ(creator_name(w), "RDivScalar");
}

// x / x = 1 with gradient gy/x - gy*x/x^2 = 0.
TEST_F(DivTest, SameVariableTwice) {
  Var x = make_var(CH_FLOAT64, {3}, {1, 2, 4});
  Var y;
  ASSERT_EQ(ch_functions_div(y.out(), x.get(), x.get()), CH_OK);
  EXPECT_TRUE(all_equal(data_of(y), CH_FLOAT64, {3}, {1, 1, 1}));
  backward(y, make_array(CH_FLOAT64, {3}, {1, 10, 100}));
  EXPECT_TRUE(all_equal(grad_of(x), CH_FLOAT64, {3}, {0, 0, 0}));
}

// IEEE semantics as NumPy: x / 0 is +-inf, 0 / 0 is NaN (no error).
TEST_F(DivTest, DivisionByZeroFollowsIeee) {
  Var a = make_var(CH_FLOAT64, {3}, {1, -1, 0});
  Var z = make_var(CH_FLOAT64, {1}, {0});
  Var y;
  ASSERT_EQ(ch_functions_div(y.out(), a.get(), z.get()), CH_OK) << ch_error_message();
  std::vector<double> v = values_of(y);
  ASSERT_EQ(v.size(), 3u);
  EXPECT_EQ(v[0], std::numeric_limits<double>::infinity());
  EXPECT_EQ(v[1], -std::numeric_limits<double>::infinity());
  EXPECT_TRUE(std::isnan(v[2]));
}

TEST_F(DivTest, BadInputs) {
  Var a = make_var(iota(CH_FLOAT64, {2, 3}));
  Var b = make_var(iota(CH_FLOAT64, {3, 3}));
  Var f = make_var(iota(CH_FLOAT32, {2, 3}));
  Var i = make_var(iota(CH_INT32, {2, 3}));
  Var y;
  EXPECT_TRUE(
      fails_with(ch_functions_div(y.out(), a.get(), b.get()), CH_ERR_SHAPE, {"(2, 3)", "(3, 3)"}));
  EXPECT_TRUE(fails_with(ch_functions_div(y.out(), f.get(), a.get()), CH_ERR_DTYPE,
                         {"float32", "float64"}));
  EXPECT_TRUE(fails_with(ch_functions_div(y.out(), i.get(), i.get()), CH_ERR_DTYPE, {"int32"}));
  EXPECT_TRUE(fails_with(ch_functions_div_scalar(y.out(), i.get(), 2), CH_ERR_DTYPE, {"int32"}));
  EXPECT_TRUE(fails_with(ch_functions_rdiv_scalar(y.out(), i.get(), 2), CH_ERR_DTYPE, {"int32"}));
  EXPECT_FALSE(y);
  ASSERT_EQ(ch_functions_rdiv_scalar(y.out(), f.get(), 3), CH_OK) << ch_error_message();
  EXPECT_TRUE(all_close(data_of(y), CH_FLOAT32, {2, 3}, {6, 2, 1.2, 3 / 3.5, 3 / 4.5, 3 / 5.5},
                        Tol{0, 1e-7}));
}

}  // namespace
