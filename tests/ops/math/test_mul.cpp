// mul (Variable * Variable, NumPy broadcasting) and mul_scalar (x * s).
#include "op_test_util.h"

namespace {

using namespace optest;

ch_status apply_mul(ch_variable** out, ch_variable* const* in, const ref::Case&) {
  return ch_functions_mul(out, in[0], in[1]);
}
ch_status apply_mul_scalar(ch_variable** out, ch_variable* const* in, const ref::Case& c) {
  return ch_functions_mul_scalar(out, in[0], c.scalar);
}

OPTEST_REFERENCE_SUITE(Mul, ref::mul_cases, apply_mul);
OPTEST_REFERENCE_SUITE(MulScalar, ref::mul_scalar_cases, apply_mul_scalar);

using MulTest = OpTest;

TEST_F(MulTest, CreatorNames) {
  Var a = make_var(CH_FLOAT32, {2}, {1, 2});
  Var y, z;
  ASSERT_EQ(ch_functions_mul(y.out(), a.get(), a.get()), CH_OK);
  ASSERT_EQ(ch_functions_mul_scalar(z.out(), a.get(), 2.0), CH_OK);
  EXPECT_EQ(creator_name(y), "Mul");
  EXPECT_EQ(creator_name(z), "MulScalar");
}

// x * x: gradient 2 x gy from the two paths.
TEST_F(MulTest, SameVariableTwice) {
  Var x = make_var(CH_FLOAT64, {3}, {1, -2, 3});
  Var y;
  ASSERT_EQ(ch_functions_mul(y.out(), x.get(), x.get()), CH_OK);
  EXPECT_TRUE(all_equal(data_of(y), CH_FLOAT64, {3}, {1, 4, 9}));
  backward(y, make_array(CH_FLOAT64, {3}, {1, 10, 100}));
  EXPECT_TRUE(all_equal(grad_of(x), CH_FLOAT64, {3}, {2, -40, 600}));
}

TEST_F(MulTest, BadInputs) {
  Var a = make_var(iota(CH_FLOAT32, {4, 1, 3}));
  Var b = make_var(iota(CH_FLOAT32, {2, 2}));
  Var d = make_var(iota(CH_FLOAT64, {3}));
  Var i = make_var(iota(CH_INT32, {3}));
  Var y;
  EXPECT_TRUE(fails_with(ch_functions_mul(y.out(), a.get(), b.get()), CH_ERR_SHAPE,
                         {"(4, 1, 3)", "(2, 2)"}));
  EXPECT_TRUE(fails_with(ch_functions_mul(y.out(), a.get(), d.get()), CH_ERR_DTYPE,
                         {"float32", "float64"}));
  EXPECT_TRUE(fails_with(ch_functions_mul(y.out(), i.get(), i.get()), CH_ERR_DTYPE, {"int32"}));
  EXPECT_TRUE(fails_with(ch_functions_mul_scalar(y.out(), i.get(), 2), CH_ERR_DTYPE, {"int32"}));
  EXPECT_FALSE(y);
  ASSERT_EQ(ch_functions_mul_scalar(y.out(), d.get(), 2), CH_OK) << ch_error_message();
  EXPECT_TRUE(all_equal(data_of(y), CH_FLOAT64, {3}, {1, 3, 5}));
}

// 100,000 elements, against the same products computed here (exact: dyadic
// values) and NumPy's exact sum and samples; backward of sum(a * b).
TEST_F(MulTest, LargeArray) {
  const int64_t n = ref::kLargeN;
  const std::vector<double> a = large_values(large_a, n), b = large_values(large_b, n);
  for (ch_dtype dt : {CH_FLOAT64, CH_FLOAT32}) {
    SCOPED_TRACE(ch_dtype_name(dt));
    Var va = make_var(dt, {n}, a), vb = make_var(dt, {n}, b);
    Var y, s;
    ASSERT_EQ(ch_functions_mul(y.out(), va.get(), vb.get()), CH_OK) << ch_error_message();
    std::vector<double> expected(a.size());
    for (size_t i = 0; i < a.size(); ++i) expected[i] = a[i] * b[i];
    EXPECT_TRUE(all_equal(data_of(y), dt, {n}, expected));
    expect_large_matches(
        data_of(y), dt, dt == CH_FLOAT64 ? ref::kLarge_mul_f64_fsum : ref::kLarge_mul_f32_fsum,
        dt == CH_FLOAT64 ? ref::kLarge_mul_f64_samples : ref::kLarge_mul_f32_samples, Tol{0, 0});
    ASSERT_EQ(ch_functions_sum(s.out(), y.get()), CH_OK) << ch_error_message();
    backward(s, Array());
    EXPECT_TRUE(all_equal(grad_of(va), dt, {n}, b));
    EXPECT_TRUE(all_equal(grad_of(vb), dt, {n}, a));
  }
}

// (1000, 1) * (1, 100): the outer product through the general broadcasting
// loop; gradients of sum(a * b) are the sums of the other operand.
TEST_F(MulTest, LargeOuterBroadcast) {
  const int64_t rows = 1000, cols = 100;
  const std::vector<double> a = large_values(large_a, rows), b = large_values(large_b, cols);
  double sum_a = 0, sum_b = 0;  // exact: multiples of 1/256 of modest size
  for (double v : a) sum_a += v;
  for (double v : b) sum_b += v;
  for (ch_dtype dt : {CH_FLOAT64, CH_FLOAT32}) {
    SCOPED_TRACE(ch_dtype_name(dt));
    Var va = make_var(dt, {rows, 1}, a), vb = make_var(dt, {1, cols}, b);
    Var y, s;
    ASSERT_EQ(ch_functions_mul(y.out(), va.get(), vb.get()), CH_OK) << ch_error_message();
    std::vector<double> expected(static_cast<size_t>(rows * cols));
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j) expected[i * cols + j] = a[i] * b[j];
    EXPECT_TRUE(all_equal(data_of(y), dt, {rows, cols}, expected));
    ASSERT_EQ(ch_functions_sum(s.out(), y.get()), CH_OK) << ch_error_message();
    backward(s, Array());
    EXPECT_TRUE(all_equal(grad_of(va), dt, {rows, 1}, std::vector<double>(rows, sum_b)));
    EXPECT_TRUE(all_equal(grad_of(vb), dt, {1, cols}, std::vector<double>(cols, sum_a)));
  }
}

}  // namespace
