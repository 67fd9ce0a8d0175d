// transpose against NumPy (nn_array_references.h), int32 data, bad axes and
// a large array through the threaded kernel.
#include "nn_array_references.h"

namespace {

using namespace optest;

ch_status apply_transpose(ch_variable** out, ch_variable* const* in, const nnref::Case& c) {
  return ch_functions_transpose(out, in[0], c.i0 ? c.ints : nullptr, c.i0 ? c.n_ints : 0);
}

NNTEST_REFERENCE_SUITE(Transpose, nnref::nn_array::transpose_cases, apply_transpose);

using TransposeTest = OpTest;

TEST_F(TransposeTest, Int32AndName) {
  Var x = make_var(CH_INT32, {2, 3}, {0, 1, 2, 3, 4, 5});
  Var y;
  ASSERT_EQ(ch_functions_transpose(y.out(), x.get(), nullptr, 0), CH_OK) << ch_error_message();
  EXPECT_EQ(creator_name(y), "Transpose");
  EXPECT_TRUE(all_equal(data_of(y), CH_INT32, {3, 2}, {0, 3, 1, 4, 2, 5}));
}

TEST_F(TransposeTest, BadAxes) {
  Var x = make_var(iota(CH_FLOAT32, {2, 3, 4}));
  Var y;
  const int32_t two[] = {1, 0};
  const int32_t repeated[] = {0, 1, 1};
  const int32_t out_of_range[] = {0, 1, 3};
  EXPECT_TRUE(fails_with(ch_functions_transpose(y.out(), x.get(), two, 2), CH_ERR_SHAPE,
                         {"2 axes", "(2, 3, 4)"}));
  EXPECT_TRUE(fails_with(ch_functions_transpose(y.out(), x.get(), repeated, 3),
                         CH_ERR_INVALID_ARGUMENT, {"axis 1", "repeated"}));
  EXPECT_TRUE(fails_with(ch_functions_transpose(y.out(), x.get(), out_of_range, 3),
                         CH_ERR_INVALID_ARGUMENT, {"axis 3"}));
  EXPECT_TRUE(fails_with(ch_functions_transpose(y.out(), x.get(), nullptr, 3),
                         CH_ERR_INVALID_ARGUMENT, {"axes is NULL"}));
  EXPECT_FALSE(y);
}

// (300, 400) reversed and back: exact, across the threaded row split.
TEST_F(TransposeTest, LargeMatrix) {
  const int64_t r = 300, c = 400;
  const std::vector<double> a = large_values(large_a, r * c);
  for (ch_dtype dt : {CH_FLOAT64, CH_FLOAT32}) {
    SCOPED_TRACE(ch_dtype_name(dt));
    Var x = make_var(dt, {r, c}, a);
    Var y;
    ASSERT_EQ(ch_functions_transpose(y.out(), x.get(), nullptr, 0), CH_OK) << ch_error_message();
    std::vector<double> expected(a.size());
    for (int64_t i = 0; i < r; ++i)
      for (int64_t j = 0; j < c; ++j) expected[j * r + i] = a[i * c + j];
    EXPECT_TRUE(all_equal(data_of(y), dt, {c, r}, expected));
    backward(y, data_of(y));
    EXPECT_TRUE(all_equal(grad_of(x), dt, {r, c}, a));
  }
}

// (3, 37, 70) with the last two axes swapped: a batch of matrix transposes
// whose tiles do not divide the extents; expected values by index formula.
TEST_F(TransposeTest, BatchedMatrices) {
  const int64_t b = 3, r = 37, c = 70;
  const std::vector<double> a = large_values(large_a, b * r * c);
  const int32_t axes[] = {0, 2, 1};
  Var x = make_var(CH_FLOAT32, {b, r, c}, a);
  Var y;
  ASSERT_EQ(ch_functions_transpose(y.out(), x.get(), axes, 3), CH_OK) << ch_error_message();
  std::vector<double> expected(a.size());
  for (int64_t k = 0; k < b; ++k)
    for (int64_t i = 0; i < r; ++i)
      for (int64_t j = 0; j < c; ++j) expected[(k * c + j) * r + i] = a[(k * r + i) * c + j];
  EXPECT_TRUE(all_equal(data_of(y), CH_FLOAT32, {b, c, r}, expected));
  backward(y, data_of(y));
  EXPECT_TRUE(all_equal(grad_of(x), CH_FLOAT32, {b, r, c}, a));
}

}  // namespace
