// sub (Variable - Variable, NumPy broadcasting), sub_scalar (x - s) and
// rsub_scalar (s - x).
#include "op_test_util.h"

namespace {

using namespace optest;

ch_status apply_sub(ch_variable** out, ch_variable* const* in, const ref::Case&) {
  return ch_functions_sub(out, in[0], in[1]);
}
ch_status apply_sub_scalar(ch_variable** out, ch_variable* const* in, const ref::Case& c) {
  return ch_functions_sub_scalar(out, in[0], c.scalar);
}
ch_status apply_rsub_scalar(ch_variable** out, ch_variable* const* in, const ref::Case& c) {
  return ch_functions_rsub_scalar(out, in[0], c.scalar);
}

OPTEST_REFERENCE_SUITE(Sub, ref::sub_cases, apply_sub);
OPTEST_REFERENCE_SUITE(SubScalar, ref::sub_scalar_cases, apply_sub_scalar);
OPTEST_REFERENCE_SUITE(RSubScalar, ref::rsub_scalar_cases, apply_rsub_scalar);

using SubTest = OpTest;

TEST_F(SubTest, CreatorNames) {
  Var a = make_var(CH_FLOAT64, {2}, {1, 2});
  Var b = make_var(CH_FLOAT64, {2}, {3, 4});
  Var y, z, w;
  ASSERT_EQ(ch_functions_sub(y.out(), a.get(), b.get()), CH_OK);
  ASSERT_EQ(ch_functions_sub_scalar(z.out(), a.get(), 1.0), CH_OK);
  ASSERT_EQ(ch_functions_rsub_scalar(w.out(), a.get(), 1.0), CH_OK);
  EXPECT_EQ(creator_name(y), "Sub");
  EXPECT_EQ(creator_name(z), "SubScalar");
  EXPECT_EQ(creator_name(w), "RSubScalar");
}

// x - x is zero and its gradient is gy - gy = 0.
TEST_F(SubTest, SameVariableTwice) {
  Var x = make_var(CH_FLOAT32, {3}, {1, 2, 3});
  Var y;
  ASSERT_EQ(ch_functions_sub(y.out(), x.get(), x.get()), CH_OK);
  EXPECT_TRUE(all_equal(data_of(y), CH_FLOAT32, {3}, {0, 0, 0}));
  backward(y, make_array(CH_FLOAT32, {3}, {1, 10, 100}));
  EXPECT_TRUE(all_equal(grad_of(x), CH_FLOAT32, {3}, {0, 0, 0}));
}

// Operand order matters: a - b and b - a, also when b is broadcast.
TEST_F(SubTest, OperandOrder) {
  Var a = make_var(CH_FLOAT64, {2, 2}, {10, 20, 30, 40});
  Var b = make_var(CH_FLOAT64, {2}, {1, 2});
  Var y, z;
  ASSERT_EQ(ch_functions_sub(y.out(), a.get(), b.get()), CH_OK);
  ASSERT_EQ(ch_functions_sub(z.out(), b.get(), a.get()), CH_OK);
  EXPECT_TRUE(all_equal(data_of(y), CH_FLOAT64, {2, 2}, {9, 18, 29, 38}));
  EXPECT_TRUE(all_equal(data_of(z), CH_FLOAT64, {2, 2}, {-9, -18, -29, -38}));
  backward(z, make_array(CH_FLOAT64, {2, 2}, {1, 2, 3, 4}));
  EXPECT_TRUE(all_equal(grad_of(b), CH_FLOAT64, {2}, {4, 6}));
  EXPECT_TRUE(all_equal(grad_of(a), CH_FLOAT64, {2, 2}, {-1, -2, -3, -4}));
}

TEST_F(SubTest, BadInputs) {
  Var a = make_var(iota(CH_FLOAT64, {2, 3}));
  Var b = make_var(iota(CH_FLOAT64, {2, 4}));
  Var f = make_var(iota(CH_FLOAT32, {2, 3}));
  Var i = make_var(iota(CH_INT32, {2, 3}));
  Var y;
  EXPECT_TRUE(
      fails_with(ch_functions_sub(y.out(), a.get(), b.get()), CH_ERR_SHAPE, {"(2, 3)", "(2, 4)"}));
  EXPECT_TRUE(fails_with(ch_functions_sub(y.out(), a.get(), f.get()), CH_ERR_DTYPE,
                         {"float64", "float32"}));
  EXPECT_TRUE(fails_with(ch_functions_sub(y.out(), i.get(), i.get()), CH_ERR_DTYPE, {"int32"}));
  EXPECT_TRUE(fails_with(ch_functions_sub_scalar(y.out(), i.get(), 1), CH_ERR_DTYPE, {"int32"}));
  EXPECT_TRUE(fails_with(ch_functions_rsub_scalar(y.out(), i.get(), 1), CH_ERR_DTYPE, {"int32"}));
  EXPECT_FALSE(y);
  ASSERT_EQ(ch_functions_rsub_scalar(y.out(), a.get(), 1), CH_OK) << ch_error_message();
  EXPECT_TRUE(all_equal(data_of(y), CH_FLOAT64, {2, 3}, {0.5, -0.5, -1.5, -2.5, -3.5, -4.5}));
}

}  // namespace
