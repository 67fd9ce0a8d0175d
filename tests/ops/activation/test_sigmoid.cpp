// sigmoid against NumPy (activation_references.h) and its saturation.
#include "activation_references.h"

namespace {

using namespace optest;

ch_status apply_sigmoid(ch_variable** out, ch_variable* const* in, const nnref::Case&) {
  return ch_functions_sigmoid(out, in[0]);
}

NNTEST_REFERENCE_SUITE(Sigmoid, nnref::activation::sigmoid_cases, apply_sigmoid);

using SigmoidTest = OpTest;

// Far from 0 the output saturates to exactly 0 and 1 without NaN.
TEST_F(SigmoidTest, Saturation) {
  for (ch_dtype dt : {CH_FLOAT64, CH_FLOAT32}) {
    Var x = make_var(dt, {2}, {-1000, 1000});
    Var y;
    ASSERT_EQ(ch_functions_sigmoid(y.out(), x.get()), CH_OK) << ch_error_message();
    EXPECT_EQ(creator_name(y), "Sigmoid");
    EXPECT_TRUE(all_equal(data_of(y), dt, {2}, {0, 1}));
    backward(y, ones_like(y));
    EXPECT_TRUE(all_equal(grad_of(x), dt, {2}, {0, 0}));
  }
}

TEST_F(SigmoidTest, BadInputs) {
  Var i = make_var(iota(CH_INT32, {3}));
  Var y;
  EXPECT_TRUE(
      fails_with(ch_functions_sigmoid(y.out(), i.get()), CH_ERR_DTYPE, {"sigmoid", "int32"}));
}

}  // namespace
