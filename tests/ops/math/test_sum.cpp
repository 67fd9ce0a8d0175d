// sum (all elements, a 0-d result) and sum_axis (one axis, negative axes
// count from the end, with and without keepdims).
#include "op_test_util.h"

namespace {

using namespace optest;

ch_status apply_sum(ch_variable** out, ch_variable* const* in, const ref::Case&) {
  return ch_functions_sum(out, in[0]);
}
ch_status apply_sum_axis(ch_variable** out, ch_variable* const* in, const ref::Case& c) {
  return ch_functions_sum_axis(out, in[0], c.axis, c.keepdims);
}

OPTEST_REFERENCE_SUITE(Sum, ref::sum_cases, apply_sum);
OPTEST_REFERENCE_SUITE(SumAxis, ref::sum_axis_cases, apply_sum_axis);

using SumTest = OpTest;

TEST_F(SumTest, CreatorNames) {
  Var x = make_var(iota(CH_FLOAT32, {2, 3}));
  Var y, z;
  ASSERT_EQ(ch_functions_sum(y.out(), x.get()), CH_OK);
  ASSERT_EQ(ch_functions_sum_axis(z.out(), x.get(), 1, 0), CH_OK);
  EXPECT_EQ(creator_name(y), "Sum");
  EXPECT_EQ(creator_name(z), "SumAxis");
}

// The sum is a 0-d variable, so backward needs no initial error (ones).
TEST_F(SumTest, ZeroDimensionalResultAndDefaultGrad) {
  Var x = make_var(CH_FLOAT64, {2, 2}, {1, 2, 3, 4});
  Var y;
  ASSERT_EQ(ch_functions_sum(y.out(), x.get()), CH_OK);
  EXPECT_TRUE(all_equal(data_of(y), CH_FLOAT64, {}, {10}));
  backward(y, Array());
  EXPECT_TRUE(all_equal(grad_of(x), CH_FLOAT64, {2, 2}, {1, 1, 1, 1}));
}

// Summing a 0-d variable or an extent-1 axis gives a new array, not the input's
// memory: changing the output does not change the input.
TEST_F(SumTest, OutputDoesNotAliasInput) {
  Array xa = make_array(CH_FLOAT64, {}, {5});
  Array xb = make_array(CH_FLOAT64, {1, 3}, {1, 2, 3});
  Var x = make_var(xa), w = make_var(xb);
  Var y, z;
  ASSERT_EQ(ch_functions_sum(y.out(), x.get()), CH_OK);
  ASSERT_EQ(ch_functions_sum_axis(z.out(), w.get(), 0, 1), CH_OK);
  Array ya = data_of(y), za = data_of(z);
  EXPECT_NE(ch_array_data(ya.get()), ch_array_data(xa.get()));
  EXPECT_NE(ch_array_data(za.get()), ch_array_data(xb.get()));
  ASSERT_EQ(ch_array_fill(ya.get(), -1), CH_OK);
  ASSERT_EQ(ch_array_fill(za.get(), -1), CH_OK);
  EXPECT_TRUE(all_equal(xa, CH_FLOAT64, {}, {5}));
  EXPECT_TRUE(all_equal(xb, CH_FLOAT64, {1, 3}, {1, 2, 3}));
}

// Empty arrays sum to 0 as in NumPy: np.zeros((0, 3)).sum() == 0,
// np.zeros((0, 3)).sum(axis=0) == [0, 0, 0], .sum(axis=1).shape == (0,).
TEST_F(SumTest, EmptyArrays) {
  Var x = make_var(CH_FLOAT64, {0, 3}, {});
  Var y, z, w;
  ASSERT_EQ(ch_functions_sum(y.out(), x.get()), CH_OK) << ch_error_message();
  EXPECT_TRUE(all_equal(data_of(y), CH_FLOAT64, {}, {0}));
  ASSERT_EQ(ch_functions_sum_axis(z.out(), x.get(), 0, 0), CH_OK) << ch_error_message();
  EXPECT_TRUE(all_equal(data_of(z), CH_FLOAT64, {3}, {0, 0, 0}));
  ASSERT_EQ(ch_functions_sum_axis(w.out(), x.get(), 1, 0), CH_OK) << ch_error_message();
  EXPECT_TRUE(all_equal(data_of(w), CH_FLOAT64, {0}, {}));
}

// 100,000 float32 ones sum to 100000 exactly (a naive float32 running sum
// would too, but 2^24 + 1 ones would not; the sum is as NumPy's).
TEST_F(SumTest, LongSum) {
  const int64_t n = ref::kLargeN;
  Var x = make_var(CH_FLOAT32, {n}, std::vector<double>(n, 1.0));
  Var y, z;
  ASSERT_EQ(ch_functions_sum(y.out(), x.get()), CH_OK);
  EXPECT_TRUE(all_equal(data_of(y), CH_FLOAT32, {}, {double(n)}));
  ASSERT_EQ(ch_functions_sum_axis(z.out(), x.get(), 0, 1), CH_OK);
  EXPECT_TRUE(all_equal(data_of(z), CH_FLOAT32, {1}, {double(n)}));
}

TEST_F(SumTest, AxisOutOfRange) {
  Var x = make_var(iota(CH_FLOAT64, {2, 3, 4}));
  Var s = make_var(CH_FLOAT64, {}, {1});
  Var y;
  EXPECT_TRUE(fails_with(ch_functions_sum_axis(y.out(), x.get(), 3, 0), CH_ERR_INVALID_ARGUMENT,
                         {"axis 3"}));
  EXPECT_TRUE(fails_with(ch_functions_sum_axis(y.out(), x.get(), -4, 1), CH_ERR_INVALID_ARGUMENT,
                         {"axis -4"}));
  EXPECT_TRUE(fails_with(ch_functions_sum_axis(y.out(), x.get(), 100, 0), CH_ERR_INVALID_ARGUMENT,
                         {"axis 100"}));
  EXPECT_TRUE(fails_with(ch_functions_sum_axis(y.out(), s.get(), 0, 0), CH_ERR_INVALID_ARGUMENT,
                         {"axis 0"}));
  EXPECT_FALSE(y);
  ASSERT_EQ(ch_functions_sum_axis(y.out(), x.get(), -1, 0), CH_OK) << ch_error_message();
  EXPECT_TRUE(all_equal(data_of(y), CH_FLOAT64, {2, 3},
                        {8, 24, 40, 56, 72, 88}));  // np.arange(24.).reshape(2,3,4).sum(-1) + 4*0.5
}

TEST_F(SumTest, Int32Rejected) {
  Var i = make_var(iota(CH_INT32, {2, 3}));
  Var f = make_var(iota(CH_FLOAT32, {2, 3}));
  Var y;
  EXPECT_TRUE(fails_with(ch_functions_sum(y.out(), i.get()), CH_ERR_DTYPE, {"int32"}));
  EXPECT_TRUE(fails_with(ch_functions_sum_axis(y.out(), i.get(), 0, 0), CH_ERR_DTYPE, {"int32"}));
  EXPECT_FALSE(y);
  ASSERT_EQ(ch_functions_sum_axis(y.out(), f.get(), 0, 0), CH_OK) << ch_error_message();
  EXPECT_TRUE(all_equal(data_of(y), CH_FLOAT32, {3}, {4, 6, 8}));
}

}  // namespace
