// accuracy against NumPy (accuracy_references.h; ties go to the first
// maximum), no gradient, bad inputs.
#include "accuracy_references.h"

namespace {

using namespace optest;

ch_status apply_accuracy(ch_variable** out, ch_variable* const* in, const nnref::Case&) {
  return ch_functions_accuracy(out, in[0], in[1]);
}

NNTEST_FORWARD_SUITE(Accuracy, nnref::evaluation::accuracy_cases, apply_accuracy);

using AccuracyTest = OpTest;

TEST_F(AccuracyTest, NotDifferentiable) {
  Var y = make_var(CH_FLOAT32, {2, 2}, {0.1, 0.9, 0.8, 0.2});
  Var t = make_var(CH_INT32, {2}, {1, 1});
  Var a;
  ASSERT_EQ(ch_functions_accuracy(a.out(), y.get(), t.get()), CH_OK) << ch_error_message();
  EXPECT_EQ(creator_name(a), "Accuracy");
  EXPECT_TRUE(all_equal(data_of(a), CH_FLOAT32, {}, {0.5}));
  backward(a, Array());
  EXPECT_FALSE(grad_of(y));
  EXPECT_FALSE(grad_of(t));
}

TEST_F(AccuracyTest, BadInputs) {
  Var y = make_var(iota(CH_FLOAT64, {3, 4}));
  Var t_high = make_var(CH_INT32, {3}, {0, 1, 4});
  Var t_float = make_var(iota(CH_FLOAT64, {3}));
  Var t_len = make_var(CH_INT32, {4}, {0, 1, 2, 3});
  Var v = make_var(iota(CH_FLOAT64, {3}));
  Var t = make_var(CH_INT32, {3}, {0, 1, 2});
  Var a;
  EXPECT_TRUE(fails_with(ch_functions_accuracy(a.out(), y.get(), t_high.get()),
                         CH_ERR_INVALID_ARGUMENT, {"accuracy", "t[2] = 4"}));
  EXPECT_TRUE(
      fails_with(ch_functions_accuracy(a.out(), y.get(), t_float.get()), CH_ERR_DTYPE, {"int32"}));
  EXPECT_TRUE(fails_with(ch_functions_accuracy(a.out(), y.get(), t_len.get()), CH_ERR_SHAPE,
                         {"(4,)", "(3, 4)"}));
  EXPECT_TRUE(fails_with(ch_functions_accuracy(a.out(), v.get(), t.get()), CH_ERR_SHAPE, {"(3,)"}));
  EXPECT_FALSE(a);
}

}  // namespace
