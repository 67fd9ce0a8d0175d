// relu and leaky_relu against NumPy (activation_references.h), bad inputs,
// and a large array split over threads.
#include "activation_references.h"

namespace {

using namespace optest;

ch_status apply_relu(ch_variable** out, ch_variable* const* in, const nnref::Case&) {
  return ch_functions_relu(out, in[0]);
}
ch_status apply_leaky_relu(ch_variable** out, ch_variable* const* in, const nnref::Case& c) {
  return ch_functions_leaky_relu(out, in[0], c.s0);
}

NNTEST_REFERENCE_SUITE(ReLU, nnref::activation::relu_cases, apply_relu);
NNTEST_REFERENCE_SUITE(LeakyReLU, nnref::activation::leaky_relu_cases, apply_leaky_relu);

using ReluTest = OpTest;

TEST_F(ReluTest, CreatorNames) {
  Var x = make_var(CH_FLOAT32, {2}, {1, -2});
  Var y, z;
  ASSERT_EQ(ch_functions_relu(y.out(), x.get()), CH_OK);
  ASSERT_EQ(ch_functions_leaky_relu(z.out(), x.get(), 0.2), CH_OK);
  EXPECT_EQ(creator_name(y), "ReLU");
  EXPECT_EQ(creator_name(z), "LeakyReLU");
}

TEST_F(ReluTest, BadInputs) {
  Var i = make_var(iota(CH_INT32, {3}));
  Var y;
  EXPECT_TRUE(fails_with(ch_functions_relu(y.out(), i.get()), CH_ERR_DTYPE, {"relu", "int32"}));
  EXPECT_TRUE(fails_with(ch_functions_leaky_relu(y.out(), i.get(), 0.2), CH_ERR_DTYPE,
                         {"leaky_relu", "int32"}));
  EXPECT_FALSE(y);
}

// Above the parallel grain: every element, and the gradient, exact.
TEST_F(ReluTest, LargeArray) {
  const int64_t n = ref::kLargeN;
  const std::vector<double> a = large_values(large_a, n), g = large_values(large_b, n);
  for (ch_dtype dt : {CH_FLOAT64, CH_FLOAT32}) {
    SCOPED_TRACE(ch_dtype_name(dt));
    Var x = make_var(dt, {n}, a);
    Var y, z;
    ASSERT_EQ(ch_functions_relu(y.out(), x.get()), CH_OK) << ch_error_message();
    std::vector<double> expected(a.size()), gx(a.size());
    for (size_t k = 0; k < a.size(); ++k) {
      expected[k] = a[k] > 0 ? a[k] : 0;
      gx[k] = a[k] > 0 ? g[k] : 0;
    }
    EXPECT_TRUE(all_equal(data_of(y), dt, {n}, expected));
    backward(y, make_array(dt, {n}, g));
    EXPECT_TRUE(all_equal(grad_of(x), dt, {n}, gx));
    ASSERT_EQ(ch_functions_leaky_relu(z.out(), x.get(), 0.5), CH_OK) << ch_error_message();
    for (size_t k = 0; k < a.size(); ++k) expected[k] = a[k] < 0 ? a[k] * 0.5 : a[k];
    EXPECT_TRUE(all_equal(data_of(z), dt, {n}, expected));
  }
}

}  // namespace
