// reshape: the same data with another shape of the same size; one extent may
// be -1 (inferred). Any dtype.
#include <cstdint>

#include "op_test_util.h"

namespace {

using namespace optest;

ch_status apply_reshape(ch_variable** out, ch_variable* const* in, const ref::Case& c) {
  return ch_functions_reshape(out, in[0], c.target, c.target_ndim);
}

OPTEST_REFERENCE_SUITE(Reshape, ref::reshape_cases, apply_reshape);
OPTEST_FORWARD_SUITE(ReshapeInt32, ref::reshape_int32_cases, apply_reshape);

using ReshapeTest = OpTest;

TEST_F(ReshapeTest, CreatorName) {
  Var x = make_var(iota(CH_FLOAT32, {2, 3}));
  Var y;
  const int64_t shape[] = {3, 2};
  ASSERT_EQ(ch_functions_reshape(y.out(), x.get(), shape, 2), CH_OK);
  EXPECT_EQ(creator_name(y), "Reshape");
}

// int32 values survive a reshape exactly (also beyond float32's 24 bits).
TEST_F(ReshapeTest, Int32ValuesPreserved) {
  const std::vector<double> v = {2147483647, -2147483647 - 1.0, 16777217, -16777217, 0, 1};
  Var x = make_var(CH_INT32, {2, 3}, v);
  Var y;
  const int64_t shape[] = {-1};
  ASSERT_EQ(ch_functions_reshape(y.out(), x.get(), shape, 1), CH_OK) << ch_error_message();
  EXPECT_TRUE(all_equal(data_of(y), CH_INT32, {6}, v));
  EXPECT_EQ(creator_name(y), "Reshape");
}

TEST_F(ReshapeTest, IncompatibleSize) {
  Var x = make_var(iota(CH_FLOAT64, {2, 3}));
  Var y;
  const int64_t four[] = {4};
  const int64_t four_m1[] = {4, -1};
  const int64_t two_m1[] = {-1, -1};
  const int64_t neg[] = {-2, -3};
  const int64_t zero_m1[] = {0, -1};
  EXPECT_TRUE(fails_with(ch_functions_reshape(y.out(), x.get(), four, 1), CH_ERR_SHAPE,
                         {"(2, 3)", "(4,)"}));
  EXPECT_TRUE(fails_with(ch_functions_reshape(y.out(), x.get(), four_m1, 2), CH_ERR_SHAPE,
                         {"(2, 3)", "(4, -1)"}));
  EXPECT_TRUE(
      fails_with(ch_functions_reshape(y.out(), x.get(), two_m1, 2), CH_ERR_SHAPE, {"(-1, -1)"}));
  EXPECT_TRUE(fails_with(ch_functions_reshape(y.out(), x.get(), neg, 2), CH_ERR_SHAPE, {"-2"}));
  EXPECT_TRUE(
      fails_with(ch_functions_reshape(y.out(), x.get(), zero_m1, 2), CH_ERR_SHAPE, {"(0, -1)"}));
  EXPECT_TRUE(
      fails_with(ch_functions_reshape(y.out(), x.get(), four, 0), CH_ERR_SHAPE, {"(2, 3)", "()"}));
  EXPECT_FALSE(y);
  const int64_t ok_shape[] = {3, -1};
  ASSERT_EQ(ch_functions_reshape(y.out(), x.get(), ok_shape, 2), CH_OK) << ch_error_message();
  EXPECT_TRUE(all_equal(data_of(y), CH_FLOAT64, {3, 2}, {0.5, 1.5, 2.5, 3.5, 4.5, 5.5}));
}

TEST_F(ReshapeTest, BadShapeArguments) {
  Var x = make_var(iota(CH_FLOAT64, {2, 3}));
  Var y;
  const int64_t nine[] = {1, 1, 1, 1, 1, 1, 1, 6, 1};
  EXPECT_TRUE(fails_with(ch_functions_reshape(y.out(), x.get(), nine, 9), CH_ERR_SHAPE, {"9"}));
  EXPECT_TRUE(fails_with(ch_functions_reshape(y.out(), x.get(), nine, -1), CH_ERR_SHAPE, {"-1"}));
  EXPECT_TRUE(
      fails_with(ch_functions_reshape(y.out(), x.get(), nullptr, 2), CH_ERR_INVALID_ARGUMENT));
  EXPECT_FALSE(y);
  ASSERT_EQ(ch_functions_reshape(y.out(), x.get(), nine, 8), CH_OK) << ch_error_message();
  EXPECT_EQ(shape_of(y), (Shape{1, 1, 1, 1, 1, 1, 1, 6}));
}

// Extents whose product overflows int64 are refused (NumPy: ValueError), and
// computing that product must not overflow (signed overflow is undefined
// behaviour; the ASan+UBSan build reports it).
TEST_F(ReshapeTest, HugeExtents) {
  Var x = make_var(iota(CH_FLOAT64, {2, 3}));
  Var y;
  const int64_t big[] = {INT64_MAX, 2};
  const int64_t big_m1[] = {-1, INT64_MAX, 4};
  EXPECT_TRUE(fails_with(ch_functions_reshape(y.out(), x.get(), big, 2), CH_ERR_SHAPE,
                         {"(2, 3)", "9223372036854775807"}));
  EXPECT_TRUE(fails_with(ch_functions_reshape(y.out(), x.get(), big_m1, 3), CH_ERR_SHAPE,
                         {"(2, 3)", "9223372036854775807"}));
  EXPECT_FALSE(y);
  const int64_t ok_shape[] = {6};
  ASSERT_EQ(ch_functions_reshape(y.out(), x.get(), ok_shape, 1), CH_OK) << ch_error_message();
}

// Size-0 arrays reshape like NumPy: np.zeros((0, 3)).reshape(3, 0), .reshape(-1, 3).
TEST_F(ReshapeTest, EmptyArrays) {
  Var x = make_var(CH_FLOAT32, {0, 3}, {});
  Var y, z;
  const int64_t a[] = {3, 0};
  const int64_t b[] = {-1, 3};
  ASSERT_EQ(ch_functions_reshape(y.out(), x.get(), a, 2), CH_OK) << ch_error_message();
  EXPECT_EQ(shape_of(y), (Shape{3, 0}));
  ASSERT_EQ(ch_functions_reshape(z.out(), x.get(), b, 2), CH_OK) << ch_error_message();
  EXPECT_EQ(shape_of(z), (Shape{0, 3}));
}

}  // namespace
