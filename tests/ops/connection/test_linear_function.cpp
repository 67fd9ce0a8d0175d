// linear (Chainer 7's F.linear(x, W, b, n_batch_axes)) against Chainer 7
// (values and the gradients of x, W and b; linear_function_references.h),
// ch_grad with respect to W (Chainer's W.grad_var case), gradients against
// central differences, second derivatives (float64), and bad arguments.
#include "connection/linear_function_references.h"
#include "op_test_util.h"

namespace {

using namespace optest;
using ref_linear_fn::Case;

bool has_bias(const Case& c) { return c.b.size > 0; }

ch_status apply(const Case& c, ch_variable* const* in, ch_variable** out) {
  const int32_t k = static_cast<int32_t>(c.n_batch_axes);
  return has_bias(c) ? ch_functions_linear(out, in[0], in[1], in[2], k)
                     : ch_functions_linear_nobias(out, in[0], in[1], k);
}

Tol fwd_tol(ch_dtype dt) { return dt == CH_FLOAT64 ? Tol{1e-14, 1e-13} : Tol{1e-6, 1e-5}; }

class LinearFnRef : public LeakChecked<::testing::TestWithParam<Case>> {};

TEST_P(LinearFnRef, ForwardAndBackward) {
  const Case& c = GetParam();
  Var x = make_var(make_array(c.dtype, c.x)), W = make_var(make_array(c.dtype, c.W));
  Var b = has_bias(c) ? make_var(make_array(c.dtype, c.b)) : Var();
  ch_variable* in[] = {x.get(), W.get(), b.get()};
  Var y;
  ASSERT_EQ(apply(c, in, y.out()), CH_OK) << ch_error_message();
  EXPECT_EQ(creator_name(y), "LinearFunction");
  EXPECT_TRUE(all_close(data_of(y).get(), c.dtype, c.y, fwd_tol(c.dtype)));
  backward(y, make_array(c.dtype, c.gy));
  EXPECT_TRUE(all_close(grad_of(x).get(), c.dtype, c.gx, fwd_tol(c.dtype))) << "gx";
  EXPECT_TRUE(all_close(grad_of(W).get(), c.dtype, c.gW, fwd_tol(c.dtype))) << "gW";
  if (has_bias(c)) {
    EXPECT_TRUE(all_close(grad_of(b).get(), c.dtype, c.gb, fwd_tol(c.dtype))) << "gb";
  }
}

// chainer.grad with respect to W alone, with and without double backprop:
// W is a variable like any other (the case issue 41 calls W.grad_var).
TEST_P(LinearFnRef, GradWithRespectToW) {
  const Case& c = GetParam();
  Var x = make_var(make_array(c.dtype, c.x)), W = make_var(make_array(c.dtype, c.W));
  Var b = has_bias(c) ? make_var(make_array(c.dtype, c.b)) : Var();
  ch_variable* in[] = {x.get(), W.get(), b.get()};
  Var y;
  ASSERT_EQ(apply(c, in, y.out()), CH_OK) << ch_error_message();
  for (int dbl = 0; dbl < 2; ++dbl) {
    ch_backward_options o = CH_BACKWARD_OPTIONS_INIT;
    o.enable_double_backprop = dbl;
    Var gy = make_var(make_array(c.dtype, c.gy)), gW;
    ch_variable* outs[] = {y.get()};
    ch_variable* gys[] = {gy.get()};
    ASSERT_EQ(ch_grad(gW.out(), outs, 1, &in[1], 1, gys, &o), CH_OK) << ch_error_message();
    EXPECT_TRUE(all_close(data_of(gW).get(), c.dtype, c.gW, fwd_tol(c.dtype))) << dbl;
    EXPECT_FALSE(grad_of(W)) << "ch_grad sets no grad field";
  }
}

TEST_P(LinearFnRef, CheckBackward) {
  const Case& c = GetParam();
  Array x = make_array(c.dtype, c.x), W = make_array(c.dtype, c.W), gy = make_array(c.dtype, c.gy);
  Array b = has_bias(c) ? make_array(c.dtype, c.b) : Array();
  Build build = [&c](ch_variable* const* in, size_t, ch_variable** out) {
    return apply(c, in, out);
  };
  std::vector<const Array*> inputs{&x, &W};
  if (has_bias(c)) inputs.push_back(&b);
  EXPECT_EQ(check_backward(build, inputs, &gy, check_tol(c.dtype)), CH_OK) << ch_error_message();
}

ch_status build_case(void* ud, ch_variable* const* in, size_t, ch_variable** out, size_t) {
  return apply(*static_cast<const Case*>(ud), in, out);
}

TEST_P(LinearFnRef, DoubleBackward) {
  const Case& c = GetParam();
  if (c.dtype != CH_FLOAT64) GTEST_SKIP() << "check_double_backward runs in float64";
  Array x = make_array(c.dtype, c.x), W = make_array(c.dtype, c.W), gy = make_array(c.dtype, c.gy);
  Array b = has_bias(c) ? make_array(c.dtype, c.b) : Array();
  auto wave = [&](const ref::Tensor& t, double s) {
    std::vector<double> v(static_cast<size_t>(t.size));
    for (size_t k = 0; k < v.size(); ++k) v[k] = std::cos(0.7 * static_cast<double>(k) + s);
    return make_array(c.dtype, shape_of(t), v);
  };
  Array ggx = wave(c.x, 0.1), ggW = wave(c.W, 0.2);
  Array ggb = has_bias(c) ? wave(c.b, 0.3) : Array();
  const size_t n = has_bias(c) ? 3 : 2;
  ch_array* xs[] = {x.get(), W.get(), b.get()};
  ch_array* gys[] = {gy.get()};
  ch_array* ggs[] = {ggx.get(), ggW.get(), ggb.get()};
  EXPECT_EQ(ch_check_double_backward(build_case, const_cast<Case*>(&c), xs, n, gys, 1, ggs, n, 1e-4,
                                     1e-6, 1e-5),
            CH_OK)
      << ch_error_message();
}

INSTANTIATE_TEST_SUITE_P(Chainer7, LinearFnRef, ::testing::ValuesIn(ref_linear_fn::cases),
                         [](const ::testing::TestParamInfo<Case>& i) {
                           return std::string(i.param.name);
                         });

class LinearFnErrors : public LeakChecked<::testing::Test> {};

Var ones(ch_dtype dt, const Shape& s) {
  return make_var(dt, s, std::vector<double>(static_cast<size_t>(size_of(s)), 1.0));
}

TEST_F(LinearFnErrors, Shapes) {
  Var x = ones(CH_FLOAT64, {2, 3, 4}), W = ones(CH_FLOAT64, {5, 4}), b = ones(CH_FLOAT64, {5});
  Var b4 = ones(CH_FLOAT64, {4}), W3 = ones(CH_FLOAT64, {5, 4, 1}), W32 = ones(CH_FLOAT32, {5, 4});
  Var y;
  EXPECT_TRUE(fails_with(ch_functions_linear(y.out(), x.get(), W.get(), b.get(), 1), CH_ERR_SHAPE,
                         {"linear", "(2, 3, 4)", "12 features", "(5, 4)", "takes 4"}));
  EXPECT_TRUE(fails_with(ch_functions_linear(y.out(), x.get(), W.get(), b4.get(), 2), CH_ERR_SHAPE,
                         {"linear", "b has shape (4,)", "(5,)"}));
  EXPECT_TRUE(fails_with(ch_functions_linear(y.out(), x.get(), W3.get(), b.get(), 2), CH_ERR_SHAPE,
                         {"linear", "W has shape (5, 4, 1)"}));
  EXPECT_TRUE(fails_with(ch_functions_linear_nobias(y.out(), x.get(), W.get(), 0),
                         CH_ERR_INVALID_ARGUMENT, {"linear", "n_batch_axes 0"}));
  EXPECT_TRUE(fails_with(ch_functions_linear_nobias(y.out(), x.get(), W.get(), 3),
                         CH_ERR_INVALID_ARGUMENT, {"linear", "n_batch_axes 3", "(2, 3, 4)"}));
  EXPECT_TRUE(fails_with(ch_functions_linear_nobias(y.out(), x.get(), W32.get(), 2), CH_ERR_DTYPE,
                         {"linear", "float64", "float32"}));
  EXPECT_TRUE(fails_with(ch_functions_linear(y.out(), x.get(), W.get(), nullptr, 2),
                         CH_ERR_NULL_HANDLE, {"ch_functions_linear", "'b'"}));
  EXPECT_TRUE(fails_with(ch_functions_linear_nobias(y.out(), x.get(), nullptr, 2),
                         CH_ERR_NULL_HANDLE, {"ch_functions_linear_nobias", "'W'"}));
  EXPECT_EQ(y.get(), nullptr);
  ASSERT_EQ(ch_functions_linear(y.out(), x.get(), W.get(), b.get(), 2), CH_OK)
      << ch_error_message();
  EXPECT_EQ(shape_of(y), (Shape{2, 3, 5}));
}

}  // namespace
