// The gradient-check API (gradient_check.h; the seed's chainer.gradient_check):
// numerical_grad, allclose with its report, check_backward on user functions
// and check_backward_graph on graphs of built-ins.
#include <cmath>

#include "user_functions.h"

using namespace capi_test;

namespace {

class GradientCheck : public CapiTest {};

// f(x) = x * x elementwise, evaluated on the current contents of `x` (the
// array numerical_grad perturbs in place). Seed 000: f = lambda: (x * x,)
ch_status square_eval(void* user_data, ch_context* ctx) {
  ch_array* x = static_cast<ch_array*>(user_data);
  ch_array* y = nullptr;
  ch_status st = new_like(&y, x);
  if (st != CH_OK) return st;
  for (int64_t i = 0; i < ch_array_size(x); ++i) {
    if (ch_array_dtype(x) == CH_FLOAT64)
      mdata<double>(y)[i] = cdata<double>(x)[i] * cdata<double>(x)[i];
    else
      mdata<float>(y)[i] = cdata<float>(x)[i] * cdata<float>(x)[i];
  }
  st = ch_context_add_output(ctx, y);
  ch_array_release(y);
  return st;
}

TEST_F(GradientCheck, NumericalGradOfSquare) {
  // numerical_grad of sum(gy * x^2) = 2 x gy (hand-derived); central
  // differences are exact for a quadratic up to rounding.
  Arr x = f64({4, 3}, {0.1, -0.2, 0.3, 1, -1, 2, 0, 5, -3, 0.7, 0.8, -0.9});
  Arr gy = full(CH_FLOAT64, {4, 3}, 1.0);
  ch_array* inputs[] = {x};
  ch_array* gys[] = {gy};
  ch_array* out[1] = {nullptr};
  ASSERT_CH_OK(ch_numerical_grad(out, square_eval, x.get(), inputs, 1, gys, 1, 1e-3));
  Arr gx(out[0]);
  EXPECT_EQ(ch_array_dtype(gx), CH_FLOAT64);
  EXPECT_EQ(shape_of(gx), (std::vector<int64_t>{4, 3}));
  std::vector<double> expected;
  for (double v : values(x)) expected.push_back(2 * v);
  EXPECT_TRUE(AllClose(values(gx), expected, 1e-9, 1e-9));
  // The input is restored after the perturbations.
  EXPECT_TRUE(AllClose(values(x), {0.1, -0.2, 0.3, 1, -1, 2, 0, 5, -3, 0.7, 0.8, -0.9}, 0, 0));

  // Weighted by gy, in float32 (the seed's example dtype).
  Arr x32 = f32({3}, {1, 2, 3});
  Arr gy32 = f32({3}, {1, 0.5, -2});
  ch_array* in32[] = {x32};
  ch_array* gy32s[] = {gy32};
  ASSERT_CH_OK(ch_numerical_grad(out, square_eval, x32.get(), in32, 1, gy32s, 1, 1e-2));
  Arr gx32(out[0]);
  EXPECT_EQ(ch_array_dtype(gx32), CH_FLOAT32);
  EXPECT_TRUE(AllClose(values(gx32), {2, 2, -12}, 1e-3, 1e-3));
}

TEST_F(GradientCheck, NumericalGradErrors) {
  Arr x = f64({2}, {1, 2});
  Arr gy = full(CH_FLOAT64, {2}, 1.0);
  Arr wrong_gy = full(CH_FLOAT64, {3}, 1.0);
  ch_array* inputs[] = {x};
  ch_array* gys[] = {gy};
  ch_array* wrong[] = {wrong_gy};
  ch_array* out[1] = {nullptr};
  EXPECT_CH_ERR(CH_ERR_INVALID_ARGUMENT,
                ch_numerical_grad(out, square_eval, x.get(), inputs, 1, gys, 1, 0.0));
  EXPECT_CH_ERR(CH_ERR_INVALID_ARGUMENT,
                ch_numerical_grad(out, nullptr, x.get(), inputs, 1, gys, 1, 1e-3));
  EXPECT_CH_ERR(CH_ERR_SHAPE,
                ch_numerical_grad(out, square_eval, x.get(), inputs, 1, wrong, 1, 1e-3));
  EXPECT_CH_ERR(CH_ERR_INVALID_ARGUMENT,
                ch_numerical_grad(out, square_eval, x.get(), inputs, 1, nullptr, 0, 1e-3));
  EXPECT_EQ(out[0], nullptr);
  EXPECT_TRUE(AllClose(values(x), {1, 2}, 0, 0)) << "input restored after a failure";
  Arr xi = make_array(CH_INT32, {2}, {1, 2});
  ch_array* ints[] = {xi};
  EXPECT_CH_ERR(CH_ERR_DTYPE, ch_numerical_grad(out, square_eval, xi.get(), ints, 1, gys, 1, 1e-3));
  // A failing evaluation callback is a callback error naming the phase.
  auto failing = [](void*, ch_context*) -> ch_status {
    ch_error_set(CH_ERR_IO, "eval exploded");
    return CH_ERR_IO;
  };
  EXPECT_CH_ERR(CH_ERR_CALLBACK, ch_numerical_grad(out, failing, nullptr, inputs, 1, gys, 1, 1e-3));
  EXPECT_TRUE(contains(ch_error_message(), "eval exploded")) << ch_error_message();
  EXPECT_TRUE(AllClose(values(x), {1, 2}, 0, 0));
}

TEST_F(GradientCheck, AllcloseReport) {
  Arr a = f64({2, 3}, {1, 2, 3, 4, 5, 6});
  Arr b = f64({2, 3}, {1, 2, 3, 4, 5, 6.5});
  ch_allclose_report r{};
  ASSERT_CH_OK(ch_allclose(a, a, 0, 0, &r));
  ASSERT_CH_OK(ch_allclose(a, b, 0.6, 0, nullptr));
  ASSERT_CH_OK(ch_allclose(a, b, 0, 0.1, nullptr));  // 0.5 <= 0.1 * 6.5

  EXPECT_CH_ERR(CH_ERR_NOT_CLOSE, ch_allclose(a, b, 0.1, 0.01, &r));
  EXPECT_EQ(r.worst_index, 5);
  EXPECT_DOUBLE_EQ(r.actual, 6);
  EXPECT_DOUBLE_EQ(r.expected, 6.5);
  EXPECT_DOUBLE_EQ(r.abs_diff, 0.5);
  EXPECT_NEAR(r.tolerance, 0.1 + 0.01 * 6.5, 1e-15);
  std::string msg = ch_error_message();
  EXPECT_TRUE(contains(msg, "(1, 2)")) << "names the worst element's index: " << msg;
  EXPECT_TRUE(contains(msg, "6.5")) << msg;

  // The worst element is the one with the largest excess, not the first bad one.
  Arr c = f32({4}, {0, 0, 0, 0});
  Arr d = f32({4}, {0.2, 0, 3, 0.5});
  EXPECT_CH_ERR(CH_ERR_NOT_CLOSE, ch_allclose(c, d, 0.1, 0, &r));
  EXPECT_EQ(r.worst_index, 2);
  EXPECT_TRUE(contains(ch_error_message(), "(2)")) << ch_error_message();

  // NaN is never close.
  Arr n1 = f64({1}, {std::nan("")});
  EXPECT_CH_ERR(CH_ERR_NOT_CLOSE, ch_allclose(n1, n1, 1, 1, &r));
  // Shapes must be equal.
  Arr e = f64({6}, {1, 2, 3, 4, 5, 6});
  EXPECT_CH_ERR(CH_ERR_SHAPE, ch_allclose(a, e, 1, 1, &r));
}

TEST_F(GradientCheck, CheckBackwardFailsForWrongBackward) {
  // MulAdd whose backward returns 3 * y * gw for x: the check must name input 0.
  Probe probe;
  probe.wrong_backward = true;
  Fn f = make_muladd(&probe);
  Arr x = f64({2, 2}, {0.1, 0.2, 0.3, 0.4});
  Arr y = f64({2, 2}, {0.5, -0.6, 0.7, -0.8});
  Arr z = f64({2, 2}, {0, 0, 0, 0});
  ch_array* inputs[] = {x, y, z};
  EXPECT_CH_ERR(CH_ERR_NOT_CLOSE, ch_check_backward(f, inputs, 3, nullptr, 0, 1e-3, 1e-5, 1e-4));
  std::string msg = ch_error_message();
  EXPECT_TRUE(contains(msg, "input 0")) << msg;
  EXPECT_TRUE(contains(msg, "float64")) << msg;
  // Fixed, it passes.
  probe.wrong_backward = false;
  EXPECT_CH_OK(ch_check_backward(f, inputs, 3, nullptr, 0, 1e-3, 1e-5, 1e-4));
  // The caller's inputs are untouched (the check works on copies).
  EXPECT_TRUE(AllClose(values(x), {0.1, 0.2, 0.3, 0.4}, 0, 0));

  // ExpAdd's input 0 wrong, float32.
  Probe probe2;
  probe2.wrong_backward = true;
  Fn g = make_expadd(&probe2);
  Arr a = f32({3}, {0.1, 0.2, 0.3});
  Arr b = f32({3}, {-0.1, 0.5, 0.0});
  ch_array* ab[] = {a, b};
  EXPECT_CH_ERR(CH_ERR_NOT_CLOSE, ch_check_backward(g, ab, 2, nullptr, 0, 1e-2, 1e-3, 1e-3));
  EXPECT_TRUE(contains(ch_error_message(), "input 0")) << ch_error_message();
}

TEST_F(GradientCheck, CheckBackwardNamesTheWrongInput) {
  // A function whose second input's gradient is wrong: y = a * b with gb = 0.
  Lambda l;
  l.forward = [](ch_context* ctx, ch_array* const* in, size_t) -> ch_status {
    ch_array* y = nullptr;
    ch_status st = new_like(&y, in[0]);
    if (st != CH_OK) return st;
    for (int64_t i = 0; i < ch_array_size(in[0]); ++i)
      mdata<double>(y)[i] = cdata<double>(in[0])[i] * cdata<double>(in[1])[i];
    st = ch_context_add_output(ctx, y);
    ch_array_release(y);
    return st;
  };
  l.backward = [](ch_context* ctx, ch_array* const* in, size_t, ch_array* const*, size_t,
                  ch_array* const* gout, size_t) -> ch_status {
    ch_array *ga = nullptr, *gb = nullptr;
    ch_status st = new_like(&ga, in[0]);
    if (st != CH_OK) return st;
    st = new_like(&gb, in[1]);
    for (int64_t i = 0; st == CH_OK && i < ch_array_size(in[0]); ++i) {
      mdata<double>(ga)[i] = cdata<double>(gout[0])[i] * cdata<double>(in[1])[i];
      mdata<double>(gb)[i] = 0;  // wrong
    }
    if (st == CH_OK) st = ch_context_set_grad_input(ctx, 0, ga);
    if (st == CH_OK) st = ch_context_set_grad_input(ctx, 1, gb);
    ch_array_release(ga);
    ch_array_release(gb);
    return st;
  };
  Fn f = make_lambda_fn("HalfWrongMul", &l);
  Arr a = f64({2}, {1, 2});
  Arr b = f64({2}, {3, 4});
  ch_array* inputs[] = {a, b};
  EXPECT_CH_ERR(CH_ERR_NOT_CLOSE, ch_check_backward(f, inputs, 2, nullptr, 0, 1e-3, 1e-6, 1e-6));
  std::string msg = ch_error_message();
  EXPECT_TRUE(contains(msg, "input 1")) << msg;
  EXPECT_FALSE(contains(msg, "input 0")) << msg;
}

TEST_F(GradientCheck, CheckBackwardSkipsInt32Inputs) {
  // gradient_check.h: "int32 inputs are not checked". y = x * k (k int32).
  Lambda l;
  l.forward = [](ch_context* ctx, ch_array* const* in, size_t) -> ch_status {
    ch_array* y = nullptr;
    ch_status st = new_like(&y, in[0]);
    if (st != CH_OK) return st;
    for (int64_t i = 0; i < ch_array_size(in[0]); ++i)
      mdata<double>(y)[i] = cdata<double>(in[0])[i] * cdata<int32_t>(in[1])[i];
    st = ch_context_add_output(ctx, y);
    ch_array_release(y);
    return st;
  };
  l.backward = [](ch_context* ctx, ch_array* const* in, size_t, ch_array* const*, size_t,
                  ch_array* const* gout, size_t) -> ch_status {
    ch_array* gx = nullptr;
    ch_status st = new_like(&gx, in[0]);
    if (st != CH_OK) return st;
    for (int64_t i = 0; i < ch_array_size(in[0]); ++i)
      mdata<double>(gx)[i] = cdata<double>(gout[0])[i] * cdata<int32_t>(in[1])[i];
    st = ch_context_set_grad_input(ctx, 0, gx);
    ch_array_release(gx);
    return st;
  };
  Fn f = make_lambda_fn("ScaleByInt", &l);
  Arr x = f64({3}, {0.5, 1.5, -2});
  Arr k = make_array(CH_INT32, {3}, {2, -1, 7});
  ch_array* inputs[] = {x, k};
  Arr gy = f64({3}, {1, 2, 3});
  ch_array* gys[] = {gy};
  EXPECT_CH_OK(ch_check_backward(f, inputs, 2, gys, 1, 1e-3, 1e-8, 1e-8));
}

TEST_F(GradientCheck, CheckBackwardArgumentErrors) {
  Probe probe;
  Fn f = make_muladd(&probe);
  Arr x = f64({2}, {1, 2});
  Arr gy_bad = f64({3}, {1, 1, 1});
  ch_array* inputs[] = {x, x, x};
  ch_array* gys[] = {gy_bad};
  EXPECT_CH_ERR(CH_ERR_SHAPE, ch_check_backward(f, inputs, 3, gys, 1, 1e-3, 1e-5, 1e-5));
  ch_array* two[] = {nullptr, nullptr};
  EXPECT_CH_ERR(CH_ERR_INVALID_ARGUMENT, ch_check_backward(f, inputs, 3, two, 2, 1e-3, 1e-5, 1e-5));
  EXPECT_CH_ERR(CH_ERR_NULL_HANDLE,
                ch_check_backward(nullptr, inputs, 3, nullptr, 0, 1e-3, 1e-5, 1e-5));
  // A built-in node is checked with ch_check_backward_graph instead.
  Var v = make_var(x);
  Var e;
  ASSERT_CH_OK(ch_functions_exp(e.out(), v));
  Fn node;
  ASSERT_CH_OK(ch_variable_creator(node.out(), e));
  EXPECT_NE(ch_check_backward(node, inputs, 1, nullptr, 0, 1e-3, 1e-5, 1e-5), CH_OK);
  EXPECT_TRUE(contains(ch_error_message(), "ch_check_backward_graph")) << ch_error_message();
}

// y0 = exp(a) * b + a / b, y1 = sum(a * a) (0-d), with broadcasting of c (3,) into a (2, 3).
ch_status builtin_graph(void*, ch_variable* const* in, size_t n_in, ch_variable** out,
                        size_t n_out) {
  if (n_in != 3 || n_out != 2) return CH_ERR_INVALID_ARGUMENT;
  ch_variable *ea = nullptr, *eab = nullptr, *adb = nullptr, *aa = nullptr, *ac = nullptr;
  ch_status st = ch_functions_exp(&ea, in[0]);
  if (st == CH_OK) st = ch_functions_mul(&eab, ea, in[1]);
  if (st == CH_OK) st = ch_functions_div(&adb, in[0], in[1]);
  if (st == CH_OK) st = ch_functions_add(&ac, adb, in[2]);  // broadcast (3,) -> (2, 3)
  if (st == CH_OK) st = ch_functions_add(&out[0], eab, ac);
  if (st == CH_OK) st = ch_functions_mul(&aa, in[0], in[0]);
  if (st == CH_OK) st = ch_functions_sum(&out[1], aa);
  for (ch_variable* v : {ea, eab, adb, aa, ac}) ch_variable_release(v);
  return st;
}

TEST_F(GradientCheck, CheckBackwardGraphOfBuiltins) {
  Arr a = f64({2, 3}, {0.1, -0.2, 0.3, 0.4, -0.5, 0.6});
  Arr b = f64({2, 3}, {1.5, 2.0, -1.2, 0.9, 1.1, 2.5});
  Arr c = f64({3}, {1, 2, 3});
  Arr gy0 = f64({2, 3}, {1, -1, 0.5, 2, 0.25, -3});
  ch_array* inputs[] = {a, b, c};
  ch_array* gys[] = {gy0, nullptr};  // NULL: ones for the 0-d output
  EXPECT_CH_OK(
      ch_check_backward_graph(builtin_graph, nullptr, inputs, 3, gys, 2, 1e-4, 1e-7, 1e-6));
  // float32 with a looser tolerance.
  Arr a32 = f32({2, 3}, {0.1, -0.2, 0.3, 0.4, -0.5, 0.6});
  Arr b32 = f32({2, 3}, {1.5, 2.0, -1.2, 0.9, 1.1, 2.5});
  Arr c32 = f32({3}, {1, 2, 3});
  ch_array* in32[] = {a32, b32, c32};
  ch_array* ones[] = {nullptr, nullptr};
  EXPECT_CH_OK(ch_check_backward_graph(builtin_graph, nullptr, in32, 3, ones, 2, 1e-2, 1e-2, 1e-2));
  // The list of output gradients is required.
  EXPECT_CH_ERR(CH_ERR_INVALID_ARGUMENT, ch_check_backward_graph(builtin_graph, nullptr, inputs, 3,
                                                                 nullptr, 2, 1e-4, 1e-7, 1e-6));
  // A failing graph callback is reported as a callback error.
  auto failing = [](void*, ch_variable* const*, size_t, ch_variable**, size_t) -> ch_status {
    ch_error_set(CH_ERR_SHAPE, "graph builder gave up");
    return CH_ERR_SHAPE;
  };
  EXPECT_CH_ERR(CH_ERR_CALLBACK,
                ch_check_backward_graph(failing, nullptr, inputs, 3, ones, 2, 1e-4, 1e-7, 1e-6));
  EXPECT_TRUE(contains(ch_error_message(), "graph builder gave up")) << ch_error_message();
  // A graph callback that leaves an output NULL breaks its contract: an error, no crash.
  auto lazy = [](void*, ch_variable* const*, size_t, ch_variable**, size_t) -> ch_status {
    return CH_OK;
  };
  EXPECT_NE(ch_check_backward_graph(lazy, nullptr, inputs, 3, ones, 2, 1e-4, 1e-7, 1e-6), CH_OK);
}

TEST_F(GradientCheck, SeedReluStyleComparison) {
  // Seed 000 "Testing Function": run backward, then compare x.grad with
  // numerical_grad of the forward function using allclose -- here for exp.
  Arr xa = f32({3, 2}, {0.1, -0.3, 0.5, 0.7, -0.9, 0.2});
  Var x = make_var(xa);
  Var y;
  ASSERT_CH_OK(ch_functions_exp(y.out(), x));
  Arr gy = f32({3, 2}, {1, 2, 3, -1, -2, 0.5});
  ASSERT_CH_OK(ch_variable_set_grad(y, gy));
  ASSERT_CH_OK(ch_variable_backward(y, 0));
  auto eval = [](void* ud, ch_context* ctx) -> ch_status {
    ch_variable* xv = static_cast<ch_variable*>(ud);
    ch_variable* out = nullptr;
    ch_status st = ch_functions_exp(&out, xv);  // f = lambda: (F.exp(x).data,)
    if (st != CH_OK) return st;
    ch_array* d = nullptr;
    st = ch_variable_data(&d, out);
    if (st == CH_OK) st = ch_context_add_output(ctx, d);
    ch_array_release(d);
    ch_variable_release(out);
    return st;
  };
  ch_array* inputs[] = {xa};
  ch_array* gys[] = {gy};
  ch_array* out[1] = {nullptr};
  ASSERT_CH_OK(ch_numerical_grad(out, eval, x.get(), inputs, 1, gys, 1, 1e-2));
  Arr gx_num(out[0]);
  Arr gx;
  ASSERT_CH_OK(ch_variable_grad(gx.out(), x));
  ch_allclose_report r{};
  EXPECT_CH_OK(ch_allclose(gx_num, gx, 1e-3, 1e-3, &r));
}

}  // namespace
