// tanh against NumPy (activation_references.h).
#include "activation_references.h"

namespace {

using namespace optest;

ch_status apply_tanh(ch_variable** out, ch_variable* const* in, const nnref::Case&) {
  return ch_functions_tanh(out, in[0]);
}

NNTEST_REFERENCE_SUITE(Tanh, nnref::activation::tanh_cases, apply_tanh);

using TanhTest = OpTest;

TEST_F(TanhTest, NameAndBadInputs) {
  Var x = make_var(CH_FLOAT64, {1}, {0.5});
  Var i = make_var(iota(CH_INT32, {3}));
  Var y;
  ASSERT_EQ(ch_functions_tanh(y.out(), x.get()), CH_OK);
  EXPECT_EQ(creator_name(y), "Tanh");
  EXPECT_TRUE(fails_with(ch_functions_tanh(y.out(), i.get()), CH_ERR_DTYPE, {"tanh", "int32"}));
}

}  // namespace
