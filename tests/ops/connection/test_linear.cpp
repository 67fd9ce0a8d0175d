// Linear (a function object with parameters "W" and "b") against NumPy
// (connection_references.h): output, input gradient, accumulated gW and gb,
// numerical gradients of x, W and b; the seed's tutorial example (1.1.3);
// Chainer's initialisation; bad arguments.
#include <cmath>

#include "connection_references.h"

namespace {

using namespace optest;

Func make_linear(const nnref::Case& c) {
  const nnref::Tensor& w = c.p[0];
  Array W = make_array(c.dtype, w);
  Array b;
  if (!c.i0) b = make_array(c.dtype, c.p[1]);
  Func f;
  OPTEST_OK(ch_functions_linear_new(f.out(), w.shape[1], w.shape[0], c.dtype, 1.0, 0.0, c.i0,
                                    W.get(), b.get()));
  return f;
}

ch_status apply_linear(ch_variable** out, ch_variable* const* in, const nnref::Case& c) {
  Func f = make_linear(c);
  return apply_function(f, in, 1, out);
}

NNTEST_REFERENCE_SUITE(Linear, nnref::connection::linear_cases, apply_linear);

class LinearParams : public NnRefTest {};

// gW and gb after one and two backward passes (they accumulate).
TEST_P(LinearParams, GradientsAccumulate) {
  const nnref::Case& c = GetParam();
  Func f = make_linear(c);
  const size_t np = c.i0 ? 1 : 2;
  ASSERT_EQ(ch_function_parameter_count(f.get()), np);
  Var x = make_var(make_array(c.dtype, c.x[0]));
  ch_variable* in[1] = {x.get()};
  Var y;
  ASSERT_EQ(apply_function(f, in, 1, y.out()), CH_OK) << ch_error_message();
  EXPECT_EQ(creator_name(y), "Linear");
  Array gy = make_array(c.dtype, c.gy);
  for (int pass = 1; pass <= 2; ++pass) {
    backward(y, gy);
    for (size_t i = 0; i < np; ++i) {
      std::vector<double> expected(c.gp[i].data, c.gp[i].data + c.gp[i].size);
      for (double& v : expected) v *= pass;
      EXPECT_TRUE(all_close(parameter_of(f, i).grad, c.dtype, shape_of(c.gp[i]), expected,
                            grad_tol(c.dtype)))
          << "parameter " << i << " after " << pass << " backward passes";
    }
  }
}

TEST_P(LinearParams, NumericalParameterGradients) {
  const nnref::Case& c = GetParam();
  Func f = make_linear(c);
  std::vector<Array> xs;
  xs.push_back(make_array(c.dtype, c.x[0]));
  check_parameter_gradients(f, xs, make_array(c.dtype, c.gy), check_tol(c.dtype));
}

INSTANTIATE_TEST_SUITE_P(NumPy, LinearParams, ::testing::ValuesIn(nnref::connection::linear_cases),
                         ::optest::NnCaseName());

using LinearTest = OpTest;

// The seed's tutorial (1.1.3): f = F.Linear(3, 2) with the W it prints, b = 0,
// x = [[1, 2, 3], [4, 5, 6]]: y as printed; with y.grad = ones,
// gW = [[5, 7, 9], [5, 7, 9]] and gb = [2, 2].
TEST_F(LinearTest, SeedTutorialExample) {
  Array W = make_array(CH_FLOAT32, {2, 3},
                       {1.33545339, -0.01839679, 0.7662735, -1.21562171, -0.44784674, -0.07128379});
  Func f;
  ASSERT_EQ(ch_functions_linear_new(f.out(), 3, 2, CH_FLOAT32, 1.0, 0.0, 0, W.get(), nullptr),
            CH_OK)
      << ch_error_message();
  EXPECT_TRUE(all_equal(parameter_of(f, 1).param, CH_FLOAT32, {2}, {0, 0}));
  Var x = make_var(CH_FLOAT32, {2, 3}, {1, 2, 3, 4, 5, 6});
  ch_variable* in[1] = {x.get()};
  Var y;
  ASSERT_EQ(apply_function(f, in, 1, y.out()), CH_OK) << ch_error_message();
  EXPECT_TRUE(all_close(data_of(y), CH_FLOAT32, {2, 2},
                        {3.5974803, -2.3251667, 9.84747124, -7.52942371}, Tol{1e-6, 1e-6}));
  backward(y, ones_like(y));
  EXPECT_TRUE(all_equal(parameter_of(f, 0).grad, CH_FLOAT32, {2, 3}, {5, 7, 9, 5, 7, 9}));
  EXPECT_TRUE(all_equal(parameter_of(f, 1).grad, CH_FLOAT32, {2}, {2, 2}));
}

// Chainer 1.0.1's initialisation: W ~ N(0, wscale^2 / in_size), b = bias;
// names "W", "b" in that order; zero gradients; nobias leaves only W; the
// seed makes it reproducible.
TEST_F(LinearTest, DefaultInitialisation) {
  const int64_t in = 400, out = 300;
  const double wscale = 2.0;
  ch_config_seed(1234);
  Func f;
  ASSERT_EQ(ch_functions_linear_new(f.out(), in, out, CH_FLOAT64, wscale, 0.5, 0, nullptr, nullptr),
            CH_OK)
      << ch_error_message();
  ASSERT_EQ(ch_function_parameter_count(f.get()), 2u);
  const char *n0 = nullptr, *n1 = nullptr;
  Array W, gW, b, gb;
  ASSERT_EQ(ch_function_parameter(W.out(), gW.out(), &n0, f.get(), 0), CH_OK);
  ASSERT_EQ(ch_function_parameter(b.out(), gb.out(), &n1, f.get(), 1), CH_OK);
  EXPECT_STREQ(n0, "W");
  EXPECT_STREQ(n1, "b");
  EXPECT_EQ(shape_of(W.get()), (Shape{out, in}));
  EXPECT_TRUE(all_equal(b, CH_FLOAT64, {out}, std::vector<double>(out, 0.5)));
  EXPECT_TRUE(all_equal(gW, CH_FLOAT64, {out, in}, std::vector<double>(out * in, 0.0)));
  EXPECT_TRUE(all_equal(gb, CH_FLOAT64, {out}, std::vector<double>(out, 0.0)));
  const std::vector<double> w = values_of(W.get());
  double mean = 0, var = 0;
  for (double v : w) mean += v;
  mean /= static_cast<double>(w.size());
  for (double v : w) var += (v - mean) * (v - mean);
  var /= static_cast<double>(w.size());
  const double expected_var = wscale * wscale / in;  // 0.01
  // 120,000 samples: the sample mean's sd is 0.1/sqrt(120000) ~ 3e-4 and the
  // sample variance's relative sd is sqrt(2/120000) ~ 0.4%; 6 sd bounds.
  EXPECT_NEAR(mean, 0.0, 2e-3);
  EXPECT_NEAR(var / expected_var, 1.0, 0.025);
  // Same seed, same W.
  ch_config_seed(1234);
  Func g;
  ASSERT_EQ(ch_functions_linear_new(g.out(), in, out, CH_FLOAT64, wscale, 0.5, 0, nullptr, nullptr),
            CH_OK);
  EXPECT_TRUE(all_equal(parameter_of(g, 0).param, CH_FLOAT64, {out, in}, w));
  Func nb;
  ASSERT_EQ(ch_functions_linear_new(nb.out(), 3, 2, CH_FLOAT32, 1.0, 0.0, 1, nullptr, nullptr),
            CH_OK);
  EXPECT_EQ(ch_function_parameter_count(nb.get()), 1u);
}

// Initial arrays are copied (later writes to them do not reach the function)
// and converted to the function's dtype.
TEST_F(LinearTest, InitialArraysAreCopiedAndConverted) {
  Array W = make_array(CH_FLOAT64, {1, 2}, {1.5, -2});
  Array b = make_array(CH_FLOAT64, {1}, {0.25});
  Func f;
  ASSERT_EQ(ch_functions_linear_new(f.out(), 2, 1, CH_FLOAT32, 1.0, 0.0, 0, W.get(), b.get()),
            CH_OK)
      << ch_error_message();
  OPTEST_OK(ch_array_fill(W.get(), 7.0));
  EXPECT_TRUE(all_equal(parameter_of(f, 0).param, CH_FLOAT32, {1, 2}, {1.5, -2}));
  EXPECT_TRUE(all_equal(parameter_of(f, 1).param, CH_FLOAT32, {1}, {0.25}));
}

// A graph through Linear twice (the same object applied to two inputs)
// accumulates both applications' gradients into one gW.
TEST_F(LinearTest, SharedParametersAcrossApplications) {
  Array W = make_array(CH_FLOAT64, {1, 2}, {1, 1});
  Func f;
  ASSERT_EQ(ch_functions_linear_new(f.out(), 2, 1, CH_FLOAT64, 1.0, 0.0, 0, W.get(), nullptr),
            CH_OK);
  Var a = make_var(CH_FLOAT64, {1, 2}, {1, 2});
  Var b = make_var(CH_FLOAT64, {1, 2}, {10, 20});
  ch_variable* ia[1] = {a.get()};
  ch_variable* ib[1] = {b.get()};
  Var ya, yb, s;
  ASSERT_EQ(apply_function(f, ia, 1, ya.out()), CH_OK);
  ASSERT_EQ(apply_function(f, ib, 1, yb.out()), CH_OK);
  ASSERT_EQ(ch_functions_add(s.out(), ya.get(), yb.get()), CH_OK);
  backward(s, ones_like(s));
  EXPECT_TRUE(all_equal(parameter_of(f, 0).grad, CH_FLOAT64, {1, 2}, {11, 22}));
  EXPECT_TRUE(all_equal(parameter_of(f, 1).grad, CH_FLOAT64, {1}, {2}));
}

TEST_F(LinearTest, BadArguments) {
  Func f;
  Array w23 = iota(CH_FLOAT32, {2, 3});
  Array b3 = iota(CH_FLOAT32, {3});
  EXPECT_TRUE(
      fails_with(ch_functions_linear_new(f.out(), 0, 2, CH_FLOAT32, 1, 0, 0, nullptr, nullptr),
                 CH_ERR_INVALID_ARGUMENT, {"in_size 0"}));
  EXPECT_TRUE(
      fails_with(ch_functions_linear_new(f.out(), 3, 2, CH_INT32, 1, 0, 0, nullptr, nullptr),
                 CH_ERR_DTYPE, {"dtype"}));
  EXPECT_TRUE(
      fails_with(ch_functions_linear_new(f.out(), 2, 3, CH_FLOAT32, 1, 0, 0, w23.get(), nullptr),
                 CH_ERR_SHAPE, {"initial W", "(2, 3)", "(3, 2)"}));
  EXPECT_TRUE(
      fails_with(ch_functions_linear_new(f.out(), 3, 2, CH_FLOAT32, 1, 0, 0, w23.get(), b3.get()),
                 CH_ERR_SHAPE, {"initial b", "(3,)", "(2,)"}));
  EXPECT_TRUE(
      fails_with(ch_functions_linear_new(f.out(), 3, 2, CH_FLOAT32, 1, 0, 1, nullptr, b3.get()),
                 CH_ERR_INVALID_ARGUMENT, {"nobias"}));
  EXPECT_TRUE(
      fails_with(ch_functions_linear_new(nullptr, 3, 2, CH_FLOAT32, 1, 0, 0, nullptr, nullptr),
                 CH_ERR_INVALID_ARGUMENT, {"out"}));
  EXPECT_FALSE(f);
  ASSERT_EQ(ch_functions_linear_new(f.out(), 3, 2, CH_FLOAT32, 1, 0, 0, w23.get(), nullptr), CH_OK);
  Var wrong = make_var(iota(CH_FLOAT32, {4, 5}));
  Var f64 = make_var(iota(CH_FLOAT64, {4, 3}));
  Var zero_d = make_var(iota(CH_FLOAT32, {}));
  Var labels = make_var(iota(CH_INT32, {4, 3}));
  Var y;
  ch_variable* in[1] = {wrong.get()};
  EXPECT_TRUE(fails_with(apply_function(f, in, 1, y.out()), CH_ERR_SHAPE,
                         {"Linear", "(4, 5)", "in_size is 3"}));
  in[0] = f64.get();
  EXPECT_TRUE(fails_with(apply_function(f, in, 1, y.out()), CH_ERR_DTYPE,
                         {"Linear", "float64", "float32"}));
  in[0] = zero_d.get();
  EXPECT_TRUE(fails_with(apply_function(f, in, 1, y.out()), CH_ERR_SHAPE, {"Linear", "0-d"}));
  in[0] = labels.get();
  EXPECT_TRUE(fails_with(apply_function(f, in, 1, y.out()), CH_ERR_DTYPE, {"Linear", "int32"}));
  EXPECT_FALSE(y);
}

}  // namespace
