// broadcast_to: x broadcast to a shape by NumPy's rules; backward sums over
// the broadcast axes.
#include <cstdint>

#include "op_test_util.h"

namespace {

using namespace optest;

ch_status apply_broadcast_to(ch_variable** out, ch_variable* const* in, const ref::Case& c) {
  return ch_functions_broadcast_to(out, in[0], c.target, c.target_ndim);
}

OPTEST_REFERENCE_SUITE(BroadcastTo, ref::broadcast_to_cases, apply_broadcast_to);

using BroadcastToTest = OpTest;

TEST_F(BroadcastToTest, CreatorName) {
  Var x = make_var(iota(CH_FLOAT32, {3}));
  Var y;
  const int64_t shape[] = {2, 3};
  ASSERT_EQ(ch_functions_broadcast_to(y.out(), x.get(), shape, 2), CH_OK);
  EXPECT_EQ(creator_name(y), "BroadcastTo");
}

// NumPy refuses each of these: np.broadcast_to(np.zeros(S), T) raises ValueError.
TEST_F(BroadcastToTest, IncompatibleShapes) {
  Var x23 = make_var(iota(CH_FLOAT64, {2, 3}));
  Var x3 = make_var(iota(CH_FLOAT64, {3}));
  Var y;
  const int64_t s3[] = {3};
  const int64_t s24[] = {2, 4};
  const int64_t s21[] = {2, 1};
  const int64_t s32[] = {3, 2};
  EXPECT_TRUE(fails_with(ch_functions_broadcast_to(y.out(), x23.get(), s3, 1), CH_ERR_SHAPE,
                         {"(2, 3)", "(3,)"}));
  EXPECT_TRUE(fails_with(ch_functions_broadcast_to(y.out(), x23.get(), s24, 2), CH_ERR_SHAPE,
                         {"(2, 3)", "(2, 4)"}));
  EXPECT_TRUE(fails_with(ch_functions_broadcast_to(y.out(), x3.get(), s21, 2), CH_ERR_SHAPE,
                         {"(3,)", "(2, 1)"}));
  EXPECT_TRUE(fails_with(ch_functions_broadcast_to(y.out(), x3.get(), s32, 2), CH_ERR_SHAPE,
                         {"(3,)", "(3, 2)"}));
  EXPECT_TRUE(fails_with(ch_functions_broadcast_to(y.out(), x3.get(), nullptr, 0), CH_ERR_SHAPE,
                         {"(3,)", "()"}));
  EXPECT_FALSE(y);
  const int64_t s43[] = {4, 3};
  ASSERT_EQ(ch_functions_broadcast_to(y.out(), x3.get(), s43, 2), CH_OK) << ch_error_message();
  EXPECT_TRUE(all_equal(data_of(y), CH_FLOAT64, {4, 3},
                        {0.5, 1.5, 2.5, 0.5, 1.5, 2.5, 0.5, 1.5, 2.5, 0.5, 1.5, 2.5}));
}

TEST_F(BroadcastToTest, BadShapeArguments) {
  Var x = make_var(iota(CH_FLOAT64, {3}));
  Var y;
  const int64_t neg[] = {-1, 3};
  const int64_t nine[] = {1, 1, 1, 1, 1, 1, 1, 1, 3};
  EXPECT_TRUE(
      fails_with(ch_functions_broadcast_to(y.out(), x.get(), neg, 2), CH_ERR_SHAPE, {"-1"}));
  EXPECT_TRUE(
      fails_with(ch_functions_broadcast_to(y.out(), x.get(), nine, 9), CH_ERR_SHAPE, {"9"}));
  EXPECT_TRUE(
      fails_with(ch_functions_broadcast_to(y.out(), x.get(), nullptr, 2), CH_ERR_INVALID_ARGUMENT));
  EXPECT_FALSE(y);
  ASSERT_EQ(ch_functions_broadcast_to(y.out(), x.get(), nine + 1, 8), CH_OK) << ch_error_message();
  EXPECT_EQ(shape_of(y), (Shape{1, 1, 1, 1, 1, 1, 1, 3}));
}

// A shape whose size overflows int64 is refused, naming it (NumPy:
// np.broadcast_to(np.ones((2, 3)), (2**63 - 1, 2, 3)) raises ValueError);
// it must not yield a variable whose shape claims more elements than its memory.
TEST_F(BroadcastToTest, SizeOverflow) {
  Var x = make_var(iota(CH_FLOAT64, {2, 3}));
  Var y;
  const int64_t big[] = {INT64_MAX, 2, 3};
  EXPECT_TRUE(fails_with(ch_functions_broadcast_to(y.out(), x.get(), big, 3), CH_ERR_SHAPE,
                         {"9223372036854775807"}));
  EXPECT_FALSE(y);
  const int64_t ok_shape[] = {2, 2, 3};
  ASSERT_EQ(ch_functions_broadcast_to(y.out(), x.get(), ok_shape, 3), CH_OK) << ch_error_message();
  EXPECT_EQ(shape_of(y), (Shape{2, 2, 3}));
}

// A representable but impossible size (2^40 * 6 float64 = 48 TiB) is an
// out-of-memory error, not an abort; the library keeps working.
#if defined(__SANITIZE_ADDRESS__)
#define CH_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CH_ASAN 1
#endif
#endif
TEST_F(BroadcastToTest, OutOfMemory) {
#if defined(CH_ASAN)
  GTEST_SKIP() << "AddressSanitizer aborts on impossible allocations (allocator_may_return_null=0)";
#else
  Var x = make_var(iota(CH_FLOAT64, {2, 3}));
  Var y;
  const int64_t huge[] = {int64_t{1} << 40, 2, 3};
  EXPECT_TRUE(
      fails_with(ch_functions_broadcast_to(y.out(), x.get(), huge, 3), CH_ERR_OUT_OF_MEMORY));
  EXPECT_FALSE(y);
  const int64_t ok_shape[] = {1, 2, 3};
  ASSERT_EQ(ch_functions_broadcast_to(y.out(), x.get(), ok_shape, 3), CH_OK) << ch_error_message();
#endif
}

// Broadcasting to a size-0 extent as NumPy: np.broadcast_to(np.ones(3), (0, 3)).
TEST_F(BroadcastToTest, ToEmpty) {
  Var x = make_var(iota(CH_FLOAT32, {3}));
  Var y;
  const int64_t s[] = {0, 3};
  ASSERT_EQ(ch_functions_broadcast_to(y.out(), x.get(), s, 2), CH_OK) << ch_error_message();
  EXPECT_EQ(shape_of(y), (Shape{0, 3}));
}

}  // namespace
