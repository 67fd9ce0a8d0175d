// exp: e ** x.
#include <limits>

#include "op_test_util.h"

namespace {

using namespace optest;

ch_status apply_exp(ch_variable** out, ch_variable* const* in, const ref::Case&) {
  return ch_functions_exp(out, in[0]);
}

OPTEST_REFERENCE_SUITE(Exp, ref::exp_cases, apply_exp);

using ExpTest = OpTest;

TEST_F(ExpTest, CreatorName) {
  Var x = make_var(CH_FLOAT32, {1}, {0});
  Var y;
  ASSERT_EQ(ch_functions_exp(y.out(), x.get()), CH_OK);
  EXPECT_EQ(creator_name(y), "Exp");
  EXPECT_TRUE(all_equal(data_of(y), CH_FLOAT32, {1}, {1}));
}

// Overflow and underflow follow IEEE as NumPy: exp(1000) = inf, exp(-1000) = 0.
TEST_F(ExpTest, Extremes) {
  Var x = make_var(CH_FLOAT64, {3}, {1000, -1000, 0});
  Var y;
  ASSERT_EQ(ch_functions_exp(y.out(), x.get()), CH_OK) << ch_error_message();
  EXPECT_TRUE(
      all_equal(data_of(y), CH_FLOAT64, {3}, {std::numeric_limits<double>::infinity(), 0, 1}));
}

TEST_F(ExpTest, Int32Rejected) {
  Var i = make_var(iota(CH_INT32, {2}));
  Var f = make_var(CH_FLOAT64, {2}, {0, 1});
  Var y;
  EXPECT_TRUE(fails_with(ch_functions_exp(y.out(), i.get()), CH_ERR_DTYPE, {"int32"}));
  EXPECT_FALSE(y);
  ASSERT_EQ(ch_functions_exp(y.out(), f.get()), CH_OK) << ch_error_message();
  EXPECT_TRUE(all_close(data_of(y), CH_FLOAT64, {2}, {1, std::exp(1.0)}, Tol{0, 1e-15}));
}

// 100,000 elements against NumPy's exact sum and samples, each element
// against std::exp, and backward of sum(exp(a)) = exp(a).
TEST_F(ExpTest, LargeArray) {
  const int64_t n = ref::kLargeN;
  const std::vector<double> a = large_values(large_a, n);
  for (ch_dtype dt : {CH_FLOAT64, CH_FLOAT32}) {
    SCOPED_TRACE(ch_dtype_name(dt));
    Var x = make_var(dt, {n}, a);
    Var y, s;
    ASSERT_EQ(ch_functions_exp(y.out(), x.get()), CH_OK) << ch_error_message();
    std::vector<double> expected(a.size());
    for (size_t i = 0; i < a.size(); ++i) expected[i] = std::exp(a[i]);
    const Tol tol = forward_tol(dt);
    EXPECT_TRUE(all_close(data_of(y), dt, {n}, expected, tol));
    expect_large_matches(
        data_of(y), dt, dt == CH_FLOAT64 ? ref::kLarge_exp_f64_fsum : ref::kLarge_exp_f32_fsum,
        dt == CH_FLOAT64 ? ref::kLarge_exp_f64_samples : ref::kLarge_exp_f32_samples, tol);
    ASSERT_EQ(ch_functions_sum(s.out(), y.get()), CH_OK) << ch_error_message();
    backward(s, Array());
    EXPECT_TRUE(all_close(grad_of(x), dt, {n}, expected, tol));
  }
}

}  // namespace
