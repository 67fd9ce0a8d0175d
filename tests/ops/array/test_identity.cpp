// identity: its input's data as a new variable; the gradient passes through.
// Any dtype.
#include "op_test_util.h"

namespace {

using namespace optest;

ch_status apply_identity(ch_variable** out, ch_variable* const* in, const ref::Case&) {
  return ch_functions_identity(out, in[0]);
}

OPTEST_REFERENCE_SUITE(Identity, ref::identity_cases, apply_identity);
OPTEST_FORWARD_SUITE(IdentityInt32, ref::identity_int32_cases, apply_identity);

using IdentityTest = OpTest;

TEST_F(IdentityTest, CreatorName) {
  Var x = make_var(iota(CH_FLOAT64, {2}));
  Var y;
  ASSERT_EQ(ch_functions_identity(y.out(), x.get()), CH_OK);
  EXPECT_EQ(creator_name(y), "Identity");
  EXPECT_NE(y.get(), x.get());
}

TEST_F(IdentityTest, Int32ValuesPreserved) {
  const std::vector<double> v = {2147483647, -2147483647 - 1.0, 16777217, 0};
  Var x = make_var(CH_INT32, {2, 2}, v);
  Var y;
  ASSERT_EQ(ch_functions_identity(y.out(), x.get()), CH_OK) << ch_error_message();
  EXPECT_TRUE(all_equal(data_of(y), CH_INT32, {2, 2}, v));
  EXPECT_EQ(creator_name(y), "Identity");
}

// A chain of identities passes the gradient to the root unchanged.
TEST_F(IdentityTest, Chain) {
  Var x = make_var(CH_FLOAT32, {3}, {1, 2, 3});
  Var cur(ch_variable_retain(x.get()));
  for (int k = 0; k < 10; ++k) {
    Var next;
    ASSERT_EQ(ch_functions_identity(next.out(), cur.get()), CH_OK);
    cur = std::move(next);
  }
  EXPECT_TRUE(all_equal(data_of(cur), CH_FLOAT32, {3}, {1, 2, 3}));
  backward(cur, make_array(CH_FLOAT32, {3}, {4, 5, 6}));
  EXPECT_TRUE(all_equal(grad_of(x), CH_FLOAT32, {3}, {4, 5, 6}));
}

// A volatile input records no history: the output has no creator.
TEST_F(IdentityTest, VolatileInput) {
  Var x = make_var(iota(CH_FLOAT64, {2}), true);
  Var y;
  ASSERT_EQ(ch_functions_identity(y.out(), x.get()), CH_OK);
  EXPECT_EQ(ch_variable_is_volatile(y.get()), 1);
  EXPECT_EQ(creator_name(y), "");
  EXPECT_TRUE(all_equal(data_of(y), CH_FLOAT64, {2}, {0.5, 1.5}));
}

}  // namespace
