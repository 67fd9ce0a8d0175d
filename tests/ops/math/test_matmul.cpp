// matmul and batch_matmul against NumPy (matmul_references.h), bad shapes,
// and a product large enough for the threaded BLAS.
#include "matmul_references.h"

namespace {

using namespace optest;

ch_status apply_matmul(ch_variable** out, ch_variable* const* in, const nnref::Case& c) {
  return ch_functions_matmul(out, in[0], in[1], c.i0, c.i1);
}
ch_status apply_batch_matmul(ch_variable** out, ch_variable* const* in, const nnref::Case& c) {
  return ch_functions_batch_matmul(out, in[0], in[1], c.i0, c.i1);
}

NNTEST_REFERENCE_SUITE(MatMul, nnref::matmul::matmul_cases, apply_matmul);
NNTEST_REFERENCE_SUITE(BatchMatMul, nnref::matmul::batch_matmul_cases, apply_batch_matmul);

using MatMulTest = OpTest;

TEST_F(MatMulTest, BadInputs) {
  Var a = make_var(iota(CH_FLOAT32, {2, 3}));
  Var b = make_var(iota(CH_FLOAT32, {2, 3}));
  Var c = make_var(iota(CH_FLOAT64, {3, 2}));
  Var d = make_var(iota(CH_FLOAT32, {2, 3, 4}));
  Var e = make_var(iota(CH_FLOAT32, {3, 4, 2}));
  Var i = make_var(iota(CH_INT32, {3, 2}));
  Var y;
  EXPECT_TRUE(fails_with(ch_functions_matmul(y.out(), a.get(), b.get(), 0, 0), CH_ERR_SHAPE,
                         {"matmul", "(2, 3)", "3 vs 2"}));
  EXPECT_TRUE(fails_with(ch_functions_matmul(y.out(), a.get(), c.get(), 0, 0), CH_ERR_DTYPE,
                         {"float32", "float64"}));
  EXPECT_TRUE(fails_with(ch_functions_matmul(y.out(), d.get(), a.get(), 0, 0), CH_ERR_SHAPE,
                         {"matmul", "(2, 3, 4)"}));
  EXPECT_TRUE(
      fails_with(ch_functions_matmul(y.out(), i.get(), i.get(), 0, 1), CH_ERR_DTYPE, {"int32"}));
  EXPECT_TRUE(fails_with(ch_functions_batch_matmul(y.out(), d.get(), e.get(), 0, 0), CH_ERR_SHAPE,
                         {"batch_matmul", "batch sizes"}));
  EXPECT_TRUE(fails_with(ch_functions_batch_matmul(y.out(), d.get(), d.get(), 0, 0), CH_ERR_SHAPE,
                         {"batch_matmul", "4 vs 3"}));
  EXPECT_FALSE(y);
  ASSERT_EQ(ch_functions_matmul(y.out(), a.get(), b.get(), 0, 1), CH_OK) << ch_error_message();
  EXPECT_EQ(creator_name(y), "MatMul");
  EXPECT_EQ(shape_of(y), (Shape{2, 2}));
}

// (200, 300) x (300, 100) with integer-valued operands: every product and sum
// is exact, so the result equals a plain triple loop in both dtypes.
TEST_F(MatMulTest, LargeExact) {
  const int64_t m = 200, k = 300, n = 100;
  std::vector<double> a(static_cast<size_t>(m * k)), b(static_cast<size_t>(k * n));
  for (size_t i = 0; i < a.size(); ++i)
    a[i] = static_cast<double>(static_cast<int64_t>(i * 7) % 9) - 4;
  for (size_t i = 0; i < b.size(); ++i)
    b[i] = static_cast<double>(static_cast<int64_t>(i * 5) % 7) - 3;
  std::vector<double> expected(static_cast<size_t>(m * n), 0.0);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j)
      for (int64_t p = 0; p < k; ++p) expected[i * n + j] += a[i * k + p] * b[p * n + j];
  for (ch_dtype dt : {CH_FLOAT64, CH_FLOAT32}) {
    SCOPED_TRACE(ch_dtype_name(dt));
    Var va = make_var(dt, {m, k}, a), vb = make_var(dt, {k, n}, b);
    Var y;
    ASSERT_EQ(ch_functions_matmul(y.out(), va.get(), vb.get(), 0, 0), CH_OK) << ch_error_message();
    EXPECT_TRUE(all_equal(data_of(y), dt, {m, n}, expected));
  }
}

}  // namespace
