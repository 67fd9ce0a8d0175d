// mean_squared_error against NumPy (loss_references.h) and bad inputs.
#include "loss_references.h"

namespace {

using namespace optest;

ch_status apply_mse(ch_variable** out, ch_variable* const* in, const nnref::Case&) {
  return ch_functions_mean_squared_error(out, in[0], in[1]);
}

NNTEST_REFERENCE_SUITE(MeanSquaredError, nnref::loss::mean_squared_error_cases, apply_mse);

using MeanSquaredErrorTest = OpTest;

TEST_F(MeanSquaredErrorTest, BadInputs) {
  Var a = make_var(iota(CH_FLOAT32, {2, 3}));
  Var b = make_var(iota(CH_FLOAT32, {3, 2}));
  Var c = make_var(iota(CH_FLOAT64, {2, 3}));
  Var y;
  EXPECT_TRUE(fails_with(ch_functions_mean_squared_error(y.out(), a.get(), b.get()), CH_ERR_SHAPE,
                         {"mean_squared_error", "(2, 3)", "(3, 2)"}));
  EXPECT_TRUE(fails_with(ch_functions_mean_squared_error(y.out(), a.get(), c.get()), CH_ERR_DTYPE,
                         {"float32", "float64"}));
  EXPECT_FALSE(y);
  ASSERT_EQ(ch_functions_mean_squared_error(y.out(), a.get(), a.get()), CH_OK);
  EXPECT_EQ(creator_name(y), "MeanSquaredError");
  EXPECT_TRUE(all_equal(data_of(y), CH_FLOAT32, {}, {0}));
}

}  // namespace
