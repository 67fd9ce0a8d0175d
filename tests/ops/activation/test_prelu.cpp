// PReLU (a function object with parameter "W") against NumPy
// (activation_references.h): output, input gradient, accumulated gW, and
// numerical gradients of the input and of W; default init; bad arguments.
#include "activation_references.h"

namespace {

using namespace optest;

// A PReLU object of the case's W shape with W set to the case's values.
Func make_prelu(const nnref::Case& c) {
  const nnref::Tensor& w = c.p[0];
  Func f;
  OPTEST_OK(ch_functions_prelu_new(f.out(), w.shape, w.ndim, c.dtype, 0.25));
  Array src = make_array(c.dtype, w);
  ParamPair p = parameter_of(f, 0);
  OPTEST_OK(ch_array_write(p.param.get(), ch_array_data(src.get()), ch_array_nbytes(src.get())));
  return f;
}

ch_status apply_prelu(ch_variable** out, ch_variable* const* in, const nnref::Case& c) {
  Func f = make_prelu(c);
  return apply_function(f, in, 1, out);
}

NNTEST_REFERENCE_SUITE(PReLU, nnref::activation::prelu_cases, apply_prelu);

class PReLUParams : public NnRefTest {};

// gW after one and two backward passes: the gradient accumulates.
TEST_P(PReLUParams, GradientAccumulates) {
  const nnref::Case& c = GetParam();
  Func f = make_prelu(c);
  Var x = make_var(make_array(c.dtype, c.x[0]));
  ch_variable* in[1] = {x.get()};
  Var y;
  ASSERT_EQ(apply_function(f, in, 1, y.out()), CH_OK) << ch_error_message();
  EXPECT_EQ(creator_name(y), "PReLU");
  Array gy = make_array(c.dtype, c.gy);
  ParamPair p = parameter_of(f, 0);
  const std::vector<double> gw(c.gp[0].data, c.gp[0].data + c.gp[0].size);
  std::vector<double> twice = gw;
  for (double& v : twice) v *= 2;
  backward(y, gy);
  EXPECT_TRUE(all_close(p.grad, c.dtype, shape_of(c.gp[0]), gw, grad_tol(c.dtype)));
  backward(y, gy);
  EXPECT_TRUE(all_close(p.grad, c.dtype, shape_of(c.gp[0]), twice, grad_tol(c.dtype)));
}

TEST_P(PReLUParams, NumericalParameterGradient) {
  const nnref::Case& c = GetParam();
  Func f = make_prelu(c);
  std::vector<Array> xs;
  xs.push_back(make_array(c.dtype, c.x[0]));
  check_parameter_gradients(f, xs, make_array(c.dtype, c.gy), check_tol(c.dtype));
}

INSTANTIATE_TEST_SUITE_P(NumPy, PReLUParams, ::testing::ValuesIn(nnref::activation::prelu_cases),
                         ::optest::NnCaseName());

using PReLUTest = OpTest;

// Defaults as the seed: one slope 0.25, named "W", gradient zero.
TEST_F(PReLUTest, DefaultParameter) {
  Func f;
  ASSERT_EQ(ch_functions_prelu_new(f.out(), nullptr, 0, CH_FLOAT32, 0.25), CH_OK)
      << ch_error_message();
  ASSERT_EQ(ch_function_parameter_count(f.get()), 1u);
  const char* name = nullptr;
  Array w, g;
  ASSERT_EQ(ch_function_parameter(w.out(), g.out(), &name, f.get(), 0), CH_OK);
  EXPECT_STREQ(name, "W");
  EXPECT_TRUE(all_equal(w, CH_FLOAT32, {}, {0.25}));
  EXPECT_TRUE(all_equal(g, CH_FLOAT32, {}, {0}));
  Var x = make_var(CH_FLOAT32, {1, 2}, {-2, 3});
  ch_variable* in[1] = {x.get()};
  Var y;
  ASSERT_EQ(apply_function(f, in, 1, y.out()), CH_OK) << ch_error_message();
  EXPECT_TRUE(all_equal(data_of(y), CH_FLOAT32, {1, 2}, {-0.5, 3}));
}

TEST_F(PReLUTest, BadArguments) {
  Func f;
  const int64_t s3[] = {3};
  EXPECT_TRUE(
      fails_with(ch_functions_prelu_new(f.out(), s3, 1, CH_INT32, 0.25), CH_ERR_DTYPE, {"dtype"}));
  EXPECT_TRUE(fails_with(ch_functions_prelu_new(nullptr, s3, 1, CH_FLOAT32, 0.25),
                         CH_ERR_INVALID_ARGUMENT, {"out"}));
  ASSERT_EQ(ch_functions_prelu_new(f.out(), s3, 1, CH_FLOAT32, 0.25), CH_OK) << ch_error_message();
  Var wrong = make_var(iota(CH_FLOAT32, {2, 4}));
  Var f64 = make_var(iota(CH_FLOAT64, {2, 3}));
  Var y;
  ch_variable* in[1] = {wrong.get()};
  EXPECT_TRUE(
      fails_with(apply_function(f, in, 1, y.out()), CH_ERR_SHAPE, {"PReLU", "(2, 4)", "(3,)"}));
  in[0] = f64.get();
  EXPECT_TRUE(
      fails_with(apply_function(f, in, 1, y.out()), CH_ERR_DTYPE, {"PReLU", "float64", "float32"}));
  EXPECT_FALSE(y);
}

}  // namespace
