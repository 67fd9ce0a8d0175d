// log: natural logarithm. Inputs are kept in [0.5, 3) by the references.
#include <limits>

#include "op_test_util.h"

namespace {

using namespace optest;

ch_status apply_log(ch_variable** out, ch_variable* const* in, const ref::Case&) {
  return ch_functions_log(out, in[0]);
}

OPTEST_REFERENCE_SUITE(Log, ref::log_cases, apply_log);

using LogTest = OpTest;

TEST_F(LogTest, CreatorName) {
  Var x = make_var(CH_FLOAT32, {1}, {1});
  Var y;
  ASSERT_EQ(ch_functions_log(y.out(), x.get()), CH_OK);
  EXPECT_EQ(creator_name(y), "Log");
  EXPECT_TRUE(all_equal(data_of(y), CH_FLOAT32, {1}, {0}));
}

// IEEE as NumPy: log(0) = -inf, log(-1) = NaN, and no error.
TEST_F(LogTest, OutsideTheDomain) {
  Var x = make_var(CH_FLOAT64, {2}, {0, -1});
  Var y;
  ASSERT_EQ(ch_functions_log(y.out(), x.get()), CH_OK) << ch_error_message();
  std::vector<double> v = values_of(y);
  ASSERT_EQ(v.size(), 2u);
  EXPECT_EQ(v[0], -std::numeric_limits<double>::infinity());
  EXPECT_TRUE(std::isnan(v[1]));
}

// log(exp(x)) = x with gradient 1.
TEST_F(LogTest, InverseOfExp) {
  Var x = make_var(CH_FLOAT64, {3}, {-1, 0, 2});
  Var e, y;
  ASSERT_EQ(ch_functions_exp(e.out(), x.get()), CH_OK);
  ASSERT_EQ(ch_functions_log(y.out(), e.get()), CH_OK);
  EXPECT_TRUE(all_close(data_of(y), CH_FLOAT64, {3}, {-1, 0, 2}, Tol{1e-15, 1e-15}));
  backward(y, make_array(CH_FLOAT64, {3}, {1, 1, 1}));
  EXPECT_TRUE(all_close(grad_of(x), CH_FLOAT64, {3}, {1, 1, 1}, Tol{0, 1e-15}));
}

TEST_F(LogTest, Int32Rejected) {
  Var i = make_var(iota(CH_INT32, {2}));
  Var f = make_var(CH_FLOAT64, {2}, {1, 4});
  Var y;
  EXPECT_TRUE(fails_with(ch_functions_log(y.out(), i.get()), CH_ERR_DTYPE, {"int32"}));
  EXPECT_FALSE(y);
  ASSERT_EQ(ch_functions_log(y.out(), f.get()), CH_OK) << ch_error_message();
  EXPECT_TRUE(all_close(data_of(y), CH_FLOAT64, {2}, {0, std::log(4.0)}, Tol{0, 1e-15}));
}

}  // namespace
