// softmax_cross_entropy against NumPy (loss_references.h), including scores
// near +-1000 (log-sum-exp stability); label and shape errors.
#include <cmath>

#include "loss_references.h"

namespace {

using namespace optest;

ch_status apply_sce(ch_variable** out, ch_variable* const* in, const nnref::Case&) {
  return ch_functions_softmax_cross_entropy(out, in[0], in[1]);
}

NNTEST_REFERENCE_SUITE(SoftmaxCrossEntropy, nnref::loss::softmax_cross_entropy_cases, apply_sce);

using SoftmaxCrossEntropyTest = OpTest;

TEST_F(SoftmaxCrossEntropyTest, BadInputs) {
  Var x = make_var(iota(CH_FLOAT32, {3, 4}));
  Var t = make_var(CH_INT32, {3}, {0, 3, 1});
  Var t_high = make_var(CH_INT32, {3}, {0, 4, 1});
  Var t_neg = make_var(CH_INT32, {3}, {0, 1, -1});
  Var t_float = make_var(iota(CH_FLOAT32, {3}));
  Var t_len = make_var(CH_INT32, {2}, {0, 1});
  Var x3 = make_var(iota(CH_FLOAT32, {3, 4, 1}));
  Var xi = make_var(iota(CH_INT32, {3, 4}));
  Var y;
  EXPECT_TRUE(fails_with(ch_functions_softmax_cross_entropy(y.out(), x.get(), t_high.get()),
                         CH_ERR_INVALID_ARGUMENT, {"softmax_cross_entropy", "t[1] = 4", "[0, 4)"}));
  EXPECT_TRUE(fails_with(ch_functions_softmax_cross_entropy(y.out(), x.get(), t_neg.get()),
                         CH_ERR_INVALID_ARGUMENT, {"t[2] = -1"}));
  EXPECT_TRUE(fails_with(ch_functions_softmax_cross_entropy(y.out(), x.get(), t_float.get()),
                         CH_ERR_DTYPE, {"t is a float32", "int32"}));
  EXPECT_TRUE(fails_with(ch_functions_softmax_cross_entropy(y.out(), x.get(), t_len.get()),
                         CH_ERR_SHAPE, {"(2,)", "(3, 4)"}));
  EXPECT_TRUE(fails_with(ch_functions_softmax_cross_entropy(y.out(), x3.get(), t.get()),
                         CH_ERR_SHAPE, {"(3, 4, 1)", "(N, C)"}));
  EXPECT_TRUE(fails_with(ch_functions_softmax_cross_entropy(y.out(), xi.get(), t.get()),
                         CH_ERR_DTYPE, {"int32"}));
  EXPECT_FALSE(y);
  ASSERT_EQ(ch_functions_softmax_cross_entropy(y.out(), x.get(), t.get()), CH_OK)
      << ch_error_message();
  EXPECT_EQ(creator_name(y), "SoftmaxCrossEntropy");
  EXPECT_EQ(shape_of(y), Shape{});
}

// Uniform scores over C classes: the loss is log(C) whatever the labels, and
// the gradient of the label entries is (1/C - 1) / N, of the others 1/(C N).
TEST_F(SoftmaxCrossEntropyTest, UniformScoresLargeBatch) {
  const int64_t n = 5000, c = 10;
  std::vector<double> labels(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) labels[static_cast<size_t>(i)] = static_cast<double>((i * 7) % c);
  Var x = make_var(CH_FLOAT64, {n, c}, std::vector<double>(static_cast<size_t>(n * c), 3.0));
  Var t = make_var(CH_INT32, {n}, labels);
  Var y;
  ASSERT_EQ(ch_functions_softmax_cross_entropy(y.out(), x.get(), t.get()), CH_OK)
      << ch_error_message();
  EXPECT_NEAR(values_of(y)[0], std::log(10.0), 1e-13);
  backward(y, Array());
  const std::vector<double> g = values_of(grad_of(x).get());
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < c; ++j) {
      const double expected = (j == static_cast<int64_t>(labels[i]) ? 0.1 - 1.0 : 0.1) / n;
      ASSERT_NEAR(g[static_cast<size_t>(i * c + j)], expected, 1e-18) << i << ", " << j;
    }
  EXPECT_FALSE(grad_of(t)) << "labels got a gradient";
}

}  // namespace
