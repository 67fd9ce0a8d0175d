// add (Variable + Variable, NumPy broadcasting) and add_scalar (x + s).
#include "op_test_util.h"

namespace {

using namespace optest;

ch_status apply_add(ch_variable** out, ch_variable* const* in, const ref::Case&) {
  return ch_functions_add(out, in[0], in[1]);
}
ch_status apply_add_scalar(ch_variable** out, ch_variable* const* in, const ref::Case& c) {
  return ch_functions_add_scalar(out, in[0], c.scalar);
}

OPTEST_REFERENCE_SUITE(Add, ref::add_cases, apply_add);
OPTEST_REFERENCE_SUITE(AddScalar, ref::add_scalar_cases, apply_add_scalar);

using AddTest = OpTest;

TEST_F(AddTest, CreatorNames) {
  Var a = make_var(CH_FLOAT32, {2}, {1, 2});
  Var b = make_var(CH_FLOAT32, {2}, {3, 4});
  Var y, z;
  ASSERT_EQ(ch_functions_add(y.out(), a.get(), b.get()), CH_OK);
  ASSERT_EQ(ch_functions_add_scalar(z.out(), a.get(), 1.0), CH_OK);
  EXPECT_EQ(creator_name(y), "Add");
  EXPECT_EQ(creator_name(z), "AddScalar");
  EXPECT_EQ(creator_name(a), "");
}

// The same variable on both sides: its gradient is the sum of both paths.
TEST_F(AddTest, SameVariableTwice) {
  Var x = make_var(CH_FLOAT64, {3}, {1, 2, 3});
  Var y;
  ASSERT_EQ(ch_functions_add(y.out(), x.get(), x.get()), CH_OK);
  EXPECT_TRUE(all_equal(data_of(y), CH_FLOAT64, {3}, {2, 4, 6}));
  backward(y, make_array(CH_FLOAT64, {3}, {1, 10, 100}));
  EXPECT_TRUE(all_equal(grad_of(x), CH_FLOAT64, {3}, {2, 20, 200}));
}

// Size-0 operands broadcast as NumPy: np.zeros((0, 3)) + np.ones(3) has shape
// (0, 3); the gradient of the (3,) operand is a sum over no rows: zeros.
TEST_F(AddTest, EmptyBroadcast) {
  for (ch_dtype dt : {CH_FLOAT64, CH_FLOAT32}) {
    SCOPED_TRACE(ch_dtype_name(dt));
    Var a = make_var(dt, {0, 3}, {});
    Var b = make_var(dt, {3}, {1, 2, 3});
    Var c = make_var(dt, {1}, {7});
    Var y, z, s;
    ASSERT_EQ(ch_functions_add(y.out(), a.get(), b.get()), CH_OK) << ch_error_message();
    EXPECT_EQ(shape_of(y), (Shape{0, 3}));
    ASSERT_EQ(ch_functions_add(z.out(), c.get(), y.get()), CH_OK) << ch_error_message();
    EXPECT_EQ(shape_of(z), (Shape{0, 3}));
    ASSERT_EQ(ch_functions_sum(s.out(), z.get()), CH_OK) << ch_error_message();
    EXPECT_TRUE(all_equal(data_of(s), dt, {}, {0}));
    backward(s, Array());
    EXPECT_TRUE(all_equal(grad_of(b), dt, {3}, {0, 0, 0}));
    EXPECT_TRUE(all_equal(grad_of(c), dt, {1}, {0}));
    EXPECT_TRUE(all_equal(grad_of(a), dt, {0, 3}, {}));
  }
}

TEST_F(AddTest, ShapeMismatch) {
  Var a = make_var(iota(CH_FLOAT32, {2, 3}));
  Var b = make_var(iota(CH_FLOAT32, {4}));
  Var c = make_var(iota(CH_FLOAT32, {3, 2}));
  Var y;
  EXPECT_TRUE(
      fails_with(ch_functions_add(y.out(), a.get(), b.get()), CH_ERR_SHAPE, {"(2, 3)", "(4,)"}));
  EXPECT_FALSE(y);
  EXPECT_TRUE(
      fails_with(ch_functions_add(y.out(), a.get(), c.get()), CH_ERR_SHAPE, {"(2, 3)", "(3, 2)"}));
  EXPECT_FALSE(y);
  // The library keeps working.
  ASSERT_EQ(ch_functions_add(y.out(), a.get(), a.get()), CH_OK) << ch_error_message();
  EXPECT_TRUE(all_equal(data_of(y), CH_FLOAT32, {2, 3}, {1, 3, 5, 7, 9, 11}));
}

TEST_F(AddTest, DtypeMismatch) {
  Var a = make_var(iota(CH_FLOAT32, {2, 3}));
  Var b = make_var(iota(CH_FLOAT64, {2, 3}));
  Var y;
  EXPECT_TRUE(fails_with(ch_functions_add(y.out(), a.get(), b.get()), CH_ERR_DTYPE,
                         {"float32", "float64"}));
  EXPECT_FALSE(y);
  EXPECT_TRUE(fails_with(ch_functions_add(y.out(), b.get(), a.get()), CH_ERR_DTYPE,
                         {"float64", "float32"}));
  ASSERT_EQ(ch_functions_add(y.out(), b.get(), b.get()), CH_OK) << ch_error_message();
  EXPECT_TRUE(all_equal(data_of(y), CH_FLOAT64, {2, 3}, {1, 3, 5, 7, 9, 11}));
}

TEST_F(AddTest, Int32Rejected) {
  Var i = make_var(iota(CH_INT32, {2, 3}));
  Var f = make_var(iota(CH_FLOAT32, {2, 3}));
  Var y;
  EXPECT_TRUE(fails_with(ch_functions_add(y.out(), i.get(), i.get()), CH_ERR_DTYPE, {"int32"}));
  EXPECT_TRUE(fails_with(ch_functions_add(y.out(), f.get(), i.get()), CH_ERR_DTYPE, {"int32"}));
  EXPECT_TRUE(fails_with(ch_functions_add_scalar(y.out(), i.get(), 1.0), CH_ERR_DTYPE, {"int32"}));
  EXPECT_FALSE(y);
  ASSERT_EQ(ch_functions_add_scalar(y.out(), f.get(), 1.0), CH_OK) << ch_error_message();
  EXPECT_TRUE(all_equal(data_of(y), CH_FLOAT32, {2, 3}, {1.5, 2.5, 3.5, 4.5, 5.5, 6.5}));
}

// 100,000 elements: every element against the same formula computed here,
// and NumPy's exact sum and samples; backward of sum(a + b) gives ones.
TEST_F(AddTest, LargeArray) {
  const int64_t n = ref::kLargeN;
  const std::vector<double> a = large_values(large_a, n), b = large_values(large_b, n);
  for (ch_dtype dt : {CH_FLOAT64, CH_FLOAT32}) {
    SCOPED_TRACE(ch_dtype_name(dt));
    Var va = make_var(dt, {n}, a), vb = make_var(dt, {n}, b);
    Var y, s;
    ASSERT_EQ(ch_functions_add(y.out(), va.get(), vb.get()), CH_OK) << ch_error_message();
    std::vector<double> expected(a.size());
    for (size_t i = 0; i < a.size(); ++i) expected[i] = a[i] + b[i];  // exact: dyadic values
    EXPECT_TRUE(all_equal(data_of(y), dt, {n}, expected));
    expect_large_matches(
        data_of(y), dt, dt == CH_FLOAT64 ? ref::kLarge_add_f64_fsum : ref::kLarge_add_f32_fsum,
        dt == CH_FLOAT64 ? ref::kLarge_add_f64_samples : ref::kLarge_add_f32_samples, Tol{0, 0});
    ASSERT_EQ(ch_functions_sum(s.out(), y.get()), CH_OK) << ch_error_message();
    backward(s, Array());
    EXPECT_TRUE(all_equal(grad_of(va), dt, {n}, std::vector<double>(a.size(), 1.0)));
    EXPECT_TRUE(all_equal(grad_of(vb), dt, {n}, std::vector<double>(a.size(), 1.0)));
  }
}

// (1000, 100) + (100,): the broadcasting loop over many rows; the gradient of
// the row vector sums 1000 ones.
TEST_F(AddTest, LargeBroadcast) {
  const int64_t rows = 1000, cols = 100;
  const std::vector<double> a = large_values(large_a, rows * cols), b = large_values(large_b, cols);
  for (ch_dtype dt : {CH_FLOAT64, CH_FLOAT32}) {
    SCOPED_TRACE(ch_dtype_name(dt));
    Var va = make_var(dt, {rows, cols}, a), vb = make_var(dt, {cols}, b);
    Var y, s;
    ASSERT_EQ(ch_functions_add(y.out(), va.get(), vb.get()), CH_OK) << ch_error_message();
    std::vector<double> expected(a.size());
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j) expected[i * cols + j] = a[i * cols + j] + b[j];
    EXPECT_TRUE(all_equal(data_of(y), dt, {rows, cols}, expected));
    ASSERT_EQ(ch_functions_sum(s.out(), y.get()), CH_OK) << ch_error_message();
    backward(s, Array());
    EXPECT_TRUE(all_equal(grad_of(va), dt, {rows, cols}, std::vector<double>(a.size(), 1.0)));
    EXPECT_TRUE(all_equal(grad_of(vb), dt, {cols}, std::vector<double>(cols, double(rows))));
  }
}

}  // namespace
