// neg: -x.
#include "op_test_util.h"

namespace {

using namespace optest;

ch_status apply_neg(ch_variable** out, ch_variable* const* in, const ref::Case&) {
  return ch_functions_neg(out, in[0]);
}

OPTEST_REFERENCE_SUITE(Neg, ref::neg_cases, apply_neg);

using NegTest = OpTest;

TEST_F(NegTest, CreatorName) {
  Var x = make_var(CH_FLOAT32, {2}, {1, 2});
  Var y;
  ASSERT_EQ(ch_functions_neg(y.out(), x.get()), CH_OK);
  EXPECT_EQ(creator_name(y), "Neg");
}

// -(-x) is x; the gradient through both is gy.
TEST_F(NegTest, Twice) {
  Var x = make_var(CH_FLOAT64, {2, 2}, {1, -2, 0, 4});
  Var y, z;
  ASSERT_EQ(ch_functions_neg(y.out(), x.get()), CH_OK);
  ASSERT_EQ(ch_functions_neg(z.out(), y.get()), CH_OK);
  EXPECT_TRUE(all_equal(data_of(y), CH_FLOAT64, {2, 2}, {-1, 2, 0, -4}));
  EXPECT_TRUE(all_equal(data_of(z), CH_FLOAT64, {2, 2}, {1, -2, 0, 4}));
  backward(z, make_array(CH_FLOAT64, {2, 2}, {1, 2, 3, 4}));
  EXPECT_TRUE(all_equal(grad_of(x), CH_FLOAT64, {2, 2}, {1, 2, 3, 4}));
}

TEST_F(NegTest, Int32Rejected) {
  Var i = make_var(iota(CH_INT32, {2}));
  Var f = make_var(iota(CH_FLOAT32, {2}));
  Var y;
  EXPECT_TRUE(fails_with(ch_functions_neg(y.out(), i.get()), CH_ERR_DTYPE, {"int32"}));
  EXPECT_FALSE(y);
  ASSERT_EQ(ch_functions_neg(y.out(), f.get()), CH_OK) << ch_error_message();
  EXPECT_TRUE(all_equal(data_of(y), CH_FLOAT32, {2}, {-0.5, -1.5}));
}

}  // namespace
