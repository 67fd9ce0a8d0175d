// softmax (axis 1) against NumPy (activation_references.h), including inputs
// near +-1000 (stability), bad inputs and a large batch split over threads.
#include <cmath>

#include "activation_references.h"

namespace {

using namespace optest;

ch_status apply_softmax(ch_variable** out, ch_variable* const* in, const nnref::Case&) {
  return ch_functions_softmax(out, in[0]);
}

NNTEST_REFERENCE_SUITE(Softmax, nnref::activation::softmax_cases, apply_softmax);

using SoftmaxTest = OpTest;

TEST_F(SoftmaxTest, BadInputs) {
  Var v = make_var(iota(CH_FLOAT32, {4}));
  Var i = make_var(iota(CH_INT32, {2, 2}));
  Var y;
  EXPECT_TRUE(
      fails_with(ch_functions_softmax(y.out(), v.get()), CH_ERR_SHAPE, {"softmax", "(4,)"}));
  EXPECT_TRUE(
      fails_with(ch_functions_softmax(y.out(), i.get()), CH_ERR_DTYPE, {"softmax", "int32"}));
  EXPECT_FALSE(y);
}

// 5000 rows of 10: each row sums to 1 and equals the row's own formula.
TEST_F(SoftmaxTest, LargeBatchRowsSumToOne) {
  const int64_t rows = 5000, cols = 10;
  const std::vector<double> a = large_values(large_a, rows * cols);
  Var x = make_var(CH_FLOAT64, {rows, cols}, a);
  Var y;
  ASSERT_EQ(ch_functions_softmax(y.out(), x.get()), CH_OK) << ch_error_message();
  EXPECT_EQ(creator_name(y), "Softmax");
  const std::vector<double> v = values_of(y);
  for (int64_t r = 0; r < rows; ++r) {
    double m = a[r * cols], s = 0, total = 0;
    for (int64_t c = 1; c < cols; ++c) m = std::max(m, a[r * cols + c]);
    for (int64_t c = 0; c < cols; ++c) s += std::exp(a[r * cols + c] - m);
    for (int64_t c = 0; c < cols; ++c) {
      ASSERT_NEAR(v[r * cols + c], std::exp(a[r * cols + c] - m) / s, 1e-15) << "row " << r;
      total += v[r * cols + c];
    }
    ASSERT_NEAR(total, 1.0, 1e-14) << "row " << r;
  }
}

}  // namespace
