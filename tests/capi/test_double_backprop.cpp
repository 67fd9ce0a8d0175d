// Double backprop through the C API: ch_variable_backward_ex,
// ch_variable_grad_var, ch_grad, the backprop-mode switch and scopes,
// ch_check_double_backward over the built-in functions (float64, against
// numerical differences of the first backward, as Chainer's
// check_double_backward), a Hessian-vector product and a WGAN-GP-style
// gradient penalty against finite differences, and user functions with and
// without a graph backward. The fixture checks every handle is given back.
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "capi_test_util.h"

using namespace capi_test;

namespace {

class DoubleBackprop : public CapiTest {};

// A graph builder for ch_check_double_backward from a C++ callable.
using Builder = std::function<ch_status(ch_variable* const*, ch_variable**)>;
struct BuilderBox {
  Builder f;
  size_t n_out = 1;
};
ch_status run_builder(void* ud, ch_variable* const* in, size_t, ch_variable** out, size_t) {
  return static_cast<BuilderBox*>(ud)->f(in, out);
}

ch_status check_double(const Builder& f, std::vector<ch_array*> inputs,
                       std::vector<ch_array*> gys = {nullptr}, std::vector<ch_array*> ggxs = {}) {
  BuilderBox box{f, gys.size()};
  return ch_check_double_backward(run_builder, &box, inputs.data(), inputs.size(), gys.data(),
                                  gys.size(), ggxs.empty() ? nullptr : ggxs.data(), ggxs.size(),
                                  1e-4, 1e-6, 1e-5);
}

std::vector<double> grid(size_t n, double start, double step) {
  std::vector<double> v;
  for (size_t i = 0; i < n; ++i) v.push_back(start + step * static_cast<double>(i));
  return v;
}

// One input, away from zero (relu's kink) and positive where asked.
Arr sample(std::vector<int64_t> shape, bool positive = false) {
  size_t n = 1;
  for (int64_t e : shape) n *= static_cast<size_t>(e);
  std::vector<double> v;
  for (size_t i = 0; i < n; ++i) {
    double t = 0.3 + 0.37 * static_cast<double>(i % 7) - (positive ? 0 : 1.05);
    v.push_back(std::fabs(t) < 0.05 ? t + 0.2 : t);
  }
  return f64(std::move(shape), v);
}

#define UNARY(call) [&](ch_variable* const* in, ch_variable** out) { return call; }

TEST_F(DoubleBackprop, EveryUnaryBuiltin) {
  Arr x = sample({2, 3}), xp = sample({2, 3}, true);
  Arr gy = f64({2, 3}, {1, -0.5, 2, 0.3, -1.2, 0.7});
  Arr ggx = f64({2, 3}, {0.4, 1.1, -0.6, 0.9, 0.2, -1.3});
  struct Case {
    const char* name;
    Builder f;
    bool positive;
  };
  std::vector<Case> cases = {
      {"neg", UNARY(ch_functions_neg(out, in[0])), false},
      {"exp", UNARY(ch_functions_exp(out, in[0])), false},
      {"log", UNARY(ch_functions_log(out, in[0])), true},
      {"tanh", UNARY(ch_functions_tanh(out, in[0])), false},
      {"sigmoid", UNARY(ch_functions_sigmoid(out, in[0])), false},
      {"relu", UNARY(ch_functions_relu(out, in[0])), false},
      {"leaky_relu", UNARY(ch_functions_leaky_relu(out, in[0], 0.2)), false},
      {"softmax", UNARY(ch_functions_softmax(out, in[0])), false},
      {"identity", UNARY(ch_functions_identity(out, in[0])), false},
      {"add_scalar", UNARY(ch_functions_add_scalar(out, in[0], 1.5)), false},
      {"sub_scalar", UNARY(ch_functions_sub_scalar(out, in[0], 1.5)), false},
      {"rsub_scalar", UNARY(ch_functions_rsub_scalar(out, in[0], 1.5)), false},
      {"mul_scalar", UNARY(ch_functions_mul_scalar(out, in[0], -2.5)), false},
      {"div_scalar", UNARY(ch_functions_div_scalar(out, in[0], 4.0)), false},
      {"rdiv_scalar", UNARY(ch_functions_rdiv_scalar(out, in[0], 2.0)), true},
      {"pow_scalar 3", UNARY(ch_functions_pow_scalar(out, in[0], 3.0)), false},
      {"pow_scalar 2.5", UNARY(ch_functions_pow_scalar(out, in[0], 2.5)), true},
      {"rpow_scalar", UNARY(ch_functions_rpow_scalar(out, in[0], 1.7)), false},
      {"transpose",
       [](ch_variable* const* in, ch_variable** out) {
         return ch_functions_transpose(out, in[0], nullptr, 0);
       },
       false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Arr& in = c.positive ? xp : x;
    std::vector<ch_array*> gys = {std::string(c.name) == "transpose" ? nullptr : gy.get()};
    EXPECT_CH_OK(check_double(c.f, {in}, gys, {ggx}));
  }
}

TEST_F(DoubleBackprop, ReductionsShapesAndBinaryBuiltins) {
  Arr a = sample({2, 3}), b = sample({2, 3}, true), c = sample({3});
  EXPECT_CH_OK(check_double(UNARY(ch_functions_sum(out, in[0])), {a}));
  EXPECT_CH_OK(check_double(UNARY(ch_functions_sum_axis(out, in[0], 1, 0)), {a}));
  EXPECT_CH_OK(check_double(UNARY(ch_functions_sum_axis(out, in[0], 0, 1)), {a}));
  const int64_t shape[] = {3, 2};
  EXPECT_CH_OK(check_double(UNARY(ch_functions_reshape(out, in[0], shape, 2)), {a}));
  const int64_t to[] = {4, 3};
  EXPECT_CH_OK(check_double(UNARY(ch_functions_broadcast_to(out, in[0], to, 2)), {c}));
  for (auto op : {ch_functions_add, ch_functions_sub, ch_functions_mul, ch_functions_div}) {
    EXPECT_CH_OK(check_double(
        [&](ch_variable* const* in, ch_variable** out) { return op(out, in[0], in[1]); }, {a, b}));
    // broadcasting: (2, 3) with (3,)
    EXPECT_CH_OK(check_double(
        [&](ch_variable* const* in, ch_variable** out) { return op(out, in[0], in[1]); }, {b, c}));
  }
  EXPECT_CH_OK(check_double(UNARY(ch_functions_mean_squared_error(out, in[0], in[1])), {a, b}));
  Arr m = sample({3, 4});
  for (int ta = 0; ta < 2; ++ta)
    for (int tb = 0; tb < 2; ++tb) {
      SCOPED_TRACE("matmul transa " + std::to_string(ta) + " transb " + std::to_string(tb));
      // op(a) is (3, 4), op(b) is (4, 2)
      Arr lhs = ta ? sample({4, 3}) : sample({3, 4});
      Arr r = sample(tb ? std::vector<int64_t>{2, 4} : std::vector<int64_t>{4, 2});
      EXPECT_CH_OK(check_double(
          [&](ch_variable* const* in, ch_variable** out) {
            return ch_functions_matmul(out, in[0], in[1], ta, tb);
          },
          {lhs, r}));
    }
  Arr ba = sample({2, 3, 4}), bb = sample({2, 4, 2});
  EXPECT_CH_OK(check_double(UNARY(ch_functions_batch_matmul(out, in[0], in[1], 0, 0)), {ba, bb}));
  Arr v = sample({4});  // a 1-D b is a column, dropped from the result (NumPy, Chainer 7)
  EXPECT_CH_OK(check_double(UNARY(ch_functions_matmul(out, in[0], in[1], 0, 0)), {m, v}));
}

// tanh after each, so that the second derivative is not zero.
TEST_F(DoubleBackprop, ConcatCopyAndDropout) {
  Arr a = sample({2, 3}), b = sample({2, 2});
  EXPECT_CH_OK(check_double(
      [](ch_variable* const* in, ch_variable** out) {
        ch_variable* c = nullptr;
        ch_status st = ch_functions_concat(&c, in, 2, 1);
        if (st == CH_OK) st = ch_functions_tanh(out, c);
        ch_variable_release(c);
        return st;
      },
      {a, b}));
  EXPECT_CH_OK(check_double(
      [](ch_variable* const* in, ch_variable** out) {
        ch_variable* c = nullptr;
        ch_status st = ch_functions_copy(&c, in[0], ch_device_cpu());
        if (st == CH_OK) st = ch_functions_tanh(out, c);
        ch_variable_release(c);
        return st;
      },
      {a}));
  // One mask for every evaluation: the same seed before each.
  EXPECT_CH_OK(check_double(
      [](ch_variable* const* in, ch_variable** out) {
        ch_config_seed(7);
        ch_variable* t = nullptr;
        ch_status st = ch_functions_tanh(&t, in[0]);
        if (st == CH_OK) st = ch_functions_dropout(out, t, 0.4, 1);
        ch_variable_release(t);
        return st;
      },
      {a}));
}

TEST_F(DoubleBackprop, LossesAndLinear) {
  Arr x = sample({3, 4});
  Arr t;
  ASSERT_CH_OK(ch_array_new_empty(t.out(), CH_INT32, std::vector<int64_t>{3}.data(), 1, cpu()));
  int32_t* pt = static_cast<int32_t*>(ch_array_data(t));
  pt[0] = 2;
  pt[1] = 0;
  pt[2] = 3;
  EXPECT_CH_OK(check_double(UNARY(ch_functions_softmax_cross_entropy(out, in[0], in[1])), {x, t}));
  // SCE after its input's last handle went (x's data released): the graph
  // backward rebuilds softmax(x) from the kept probabilities.
  EXPECT_CH_OK(check_double(
      [](ch_variable* const* in, ch_variable** out) {
        ch_variable* h = nullptr;
        ch_status st = ch_functions_tanh(&h, in[0]);
        if (st == CH_OK) st = ch_functions_softmax_cross_entropy(out, h, in[1]);
        ch_variable_release(h);
        return st;
      },
      {x, t}));
  Arr W = f64({2, 4}, {0.1, -0.2, 0.3, 0.5, -0.4, 0.25, 0.6, -0.1});
  Arr b = f64({2}, {0.05, -0.1});
  Fn lin;
  ASSERT_CH_OK(ch_functions_linear_new(lin.out(), 4, 2, CH_FLOAT64, 1.0, 0, 0, W, b));
  // tanh(linear(x)): the second derivative with respect to x goes through W.
  EXPECT_CH_OK(check_double(
      [&](ch_variable* const* in, ch_variable** out) {
        ch_variable* y = nullptr;
        size_t n = 0;
        ch_status st = ch_function_apply(lin, in, 1, &y, 1, &n);
        if (st == CH_OK) st = ch_functions_tanh(out, y);
        ch_variable_release(y);
        return st;
      },
      {x}));
}

TEST_F(DoubleBackprop, BackwardExGivesDifferentiableGradients) {
  // y = sum(x^3): x.grad_var = 3 x^2; backward of sum(grad_var) gives 6 x.
  Var x = var_f64({3}, {0.5, -1.0, 2.0});
  Var c, y;
  ASSERT_CH_OK(ch_functions_pow_scalar(c.out(), x, 3.0));
  ASSERT_CH_OK(ch_functions_sum(y.out(), c));
  ch_backward_options opt = CH_BACKWARD_OPTIONS_INIT;
  opt.enable_double_backprop = 1;
  ASSERT_CH_OK(ch_variable_backward_ex(y, &opt));
  EXPECT_TRUE(AllClose(grad_of(x), {0.75, 3.0, 12.0}));
  Var gx, s;
  ASSERT_CH_OK(ch_variable_grad_var(gx.out(), x));
  ASSERT_TRUE(gx);
  EXPECT_TRUE(has_creator(gx)) << "the gradient carries a graph";
  ASSERT_CH_OK(ch_functions_sum(s.out(), gx));
  ASSERT_CH_OK(ch_variable_set_grad(x, nullptr));  // breaks x -> grad_var -> x
  ASSERT_CH_OK(ch_variable_backward(s, 0));
  EXPECT_TRUE(AllClose(grad_of(x), {3.0, -6.0, 12.0}));
  // Without double backprop the grad is a plain root, and the defaults match
  // ch_variable_backward.
  ch_backward_options plain = CH_BACKWARD_OPTIONS_INIT;
  ASSERT_CH_OK(ch_variable_backward_ex(y, &plain));
  EXPECT_TRUE(AllClose(grad_of(x), {0.75, 3.0, 12.0}));
  ASSERT_CH_OK(ch_variable_grad_var(gx.out(), x));
  EXPECT_FALSE(has_creator(gx));
  ASSERT_CH_OK(ch_variable_backward_ex(y, nullptr));
  ch_backward_options bad = CH_BACKWARD_OPTIONS_INIT;
  bad.version = 99;
  EXPECT_CH_ERR(CH_ERR_INVALID_ARGUMENT, ch_variable_backward_ex(y, &bad));
  ASSERT_CH_OK(ch_variable_set_grad(x, nullptr));
}

TEST_F(DoubleBackprop, GradLeavesGradFieldsUntouched) {
  Var x = var_f64({2}, {0.3, -0.7});
  Arr before = f64({2}, {42, 43});
  ASSERT_CH_OK(ch_variable_set_grad(x, before));
  Arr W = f64({1, 2}, {0.5, -1.5});
  Fn lin;
  ASSERT_CH_OK(ch_functions_linear_new(lin.out(), 2, 1, CH_FLOAT64, 1.0, 0, 1, W, nullptr));
  Var x2, t, y;
  const int64_t row[] = {1, 2};
  ASSERT_CH_OK(ch_functions_reshape(x2.out(), x, row, 2));
  ch_variable* in[] = {x2};
  ASSERT_CH_OK(ch_function_apply(lin, in, 1, t.out(), 1, nullptr));
  ASSERT_CH_OK(ch_functions_tanh(y.out(), t));  // (1, 1)
  Var gx;
  ch_variable* outs[] = {y};
  ch_variable* ins[] = {x};
  ch_backward_options opt = CH_BACKWARD_OPTIONS_INIT;
  opt.enable_double_backprop = 1;
  ASSERT_CH_OK(ch_grad(gx.out(), outs, 1, ins, 1, nullptr, &opt));
  const double th = std::tanh(0.5 * 0.3 + -1.5 * -0.7), d = 1 - th * th;
  EXPECT_TRUE(AllClose(data_of(gx), {d * 0.5, d * -1.5}));
  EXPECT_TRUE(AllClose(grad_of(x), {42, 43})) << "x.grad is untouched";
  EXPECT_FALSE(has_grad(y));
  Arr gW;
  ASSERT_CH_OK(ch_function_parameter(nullptr, gW.out(), nullptr, lin, 0));
  EXPECT_TRUE(AllClose(values(gW), {0, 0})) << "parameter gradients are untouched";
  // An unreachable input gets NULL; a seed of the wrong shape is refused.
  Var other = var_f64({2}, {1, 2});
  ch_variable* two[] = {x, other};
  ch_variable* res[2] = {nullptr, nullptr};
  ASSERT_CH_OK(ch_grad(res, outs, 1, two, 2, nullptr, nullptr));
  EXPECT_NE(res[0], nullptr);
  EXPECT_EQ(res[1], nullptr);
  ch_variable_release(res[0]);
  Var seed = var_f64({3}, {1, 2, 3});
  ch_variable* seeds[] = {seed};
  EXPECT_CH_ERR(CH_ERR_SHAPE, ch_grad(res, outs, 1, ins, 1, seeds, nullptr));
}

TEST_F(DoubleBackprop, BackpropModes) {
  Var x = var_f64({2}, {1, 2});
  EXPECT_EQ(ch_backprop_mode_enabled(), 1);
  ASSERT_CH_OK(ch_backprop_mode_push(0));
  EXPECT_EQ(ch_backprop_mode_enabled(), 0);
  Var y;
  ASSERT_CH_OK(ch_functions_exp(y.out(), x));
  EXPECT_FALSE(has_creator(y)) << "no_backprop_mode records nothing";
  ASSERT_CH_OK(ch_backprop_mode_push(1));  // force_backprop_mode inside
  ASSERT_CH_OK(ch_functions_exp(y.out(), x));
  EXPECT_TRUE(has_creator(y));
  ASSERT_CH_OK(ch_backprop_mode_pop());
  ASSERT_CH_OK(ch_backprop_mode_pop());
  EXPECT_CH_ERR(CH_ERR_GRAPH, ch_backprop_mode_pop());
  ch_config_set_enable_backprop(0);
  EXPECT_EQ(ch_config_enable_backprop(), 0);
  ASSERT_CH_OK(ch_functions_exp(y.out(), x));
  EXPECT_FALSE(has_creator(y));
  ch_config_set_enable_backprop(1);
  ASSERT_CH_OK(ch_functions_exp(y.out(), x));
  EXPECT_TRUE(has_creator(y));
}

// f(W1) = sum(tanh(x W1) w2) for a batch x: the Hessian-vector product
// H v = d/dW1 <grad f, v> against (grad f(W1 + e v) - grad f(W1 - e v)) / 2e.
struct Mlp {
  Arr xa = f64({2, 3}, {0.2, -0.4, 0.6, -0.1, 0.3, 0.5});
  Arr w2a = f64({4, 1}, {0.7, -0.3, 0.5, 0.9});
  ch_status f(ch_variable* W1, ch_variable** out) const {
    Var x = make_var(xa), w2 = make_var(w2a), h, t, o;
    ch_status st = ch_functions_matmul(h.out(), x, W1, 0, 0);
    if (st == CH_OK) st = ch_functions_tanh(t.out(), h);
    if (st == CH_OK) st = ch_functions_matmul(o.out(), t, w2, 0, 0);
    if (st == CH_OK) st = ch_functions_sum(out, o);
    return st;
  }
  std::vector<double> grad(const std::vector<double>& w) const {
    Var W = var_f64({3, 4}, w), y, g;
    EXPECT_CH_OK(f(W, y.out()));
    ch_variable* outs[] = {y};
    ch_variable* ins[] = {W};
    EXPECT_CH_OK(ch_grad(g.out(), outs, 1, ins, 1, nullptr, nullptr));
    return data_of(g);
  }
};

TEST_F(DoubleBackprop, HessianVectorProductOfAnMlp) {
  Mlp mlp;
  std::vector<double> w = grid(12, -0.5, 0.09), v = grid(12, 0.3, -0.05);
  Var W = var_f64({3, 4}, w), y, g, gv, s, hv;
  ASSERT_CH_OK(mlp.f(W, y.out()));
  ch_variable* outs[] = {y};
  ch_variable* ins[] = {W};
  ch_backward_options opt = CH_BACKWARD_OPTIONS_INIT;
  opt.enable_double_backprop = 1;
  ASSERT_CH_OK(ch_grad(g.out(), outs, 1, ins, 1, nullptr, &opt));
  Var vv = var_f64({3, 4}, v);
  ASSERT_CH_OK(ch_functions_mul(gv.out(), g, vv));
  ASSERT_CH_OK(ch_functions_sum(s.out(), gv));
  ch_variable* souts[] = {s};
  ASSERT_CH_OK(ch_grad(hv.out(), souts, 1, ins, 1, nullptr, nullptr));
  const double e = 1e-5;
  std::vector<double> wp = w, wm = w, expected;
  for (size_t i = 0; i < w.size(); ++i) {
    wp[i] += e * v[i];
    wm[i] -= e * v[i];
  }
  std::vector<double> gp = mlp.grad(wp), gm = mlp.grad(wm);
  for (size_t i = 0; i < w.size(); ++i) expected.push_back((gp[i] - gm[i]) / (2 * e));
  EXPECT_TRUE(AllClose(data_of(hv), expected, 1e-7, 1e-5));
  double norm = 0;
  for (double h : expected) norm += h * h;
  EXPECT_GT(norm, 1e-4) << "a non-trivial Hessian";
}

// WGAN-GP's penalty for a critic D(x) = sum(tanh(x W1 + b1) w2) on points
// x: P(W1) = mean((|dD/dx|_row - 1)^2), trained by plain gradient steps on W1.
struct Critic {
  Arr xa = f64({3, 2}, {0.5, -0.2, -0.7, 0.4, 0.1, 0.9});
  Arr w2a = f64({4, 1}, {0.8, -0.6, 0.4, 1.1});
  ch_status penalty(ch_variable* W1, ch_variable** out) const {
    Var x = make_var(xa), w2 = make_var(w2a), h, t, o, d, g, g2, n2, n, m, m2;
    ch_status st = ch_functions_matmul(h.out(), x, W1, 0, 0);
    if (st == CH_OK) st = ch_functions_tanh(t.out(), h);
    if (st == CH_OK) st = ch_functions_matmul(o.out(), t, w2, 0, 0);
    if (st == CH_OK) st = ch_functions_sum(d.out(), o);
    ch_variable* outs[] = {d};
    ch_variable* ins[] = {x};
    ch_backward_options opt = CH_BACKWARD_OPTIONS_INIT;
    opt.enable_double_backprop = 1;
    if (st == CH_OK) st = ch_grad(g.out(), outs, 1, ins, 1, nullptr, &opt);
    if (st == CH_OK) st = ch_functions_mul(g2.out(), g, g);
    if (st == CH_OK) st = ch_functions_sum_axis(n2.out(), g2, 1, 0);
    if (st == CH_OK) st = ch_functions_pow_scalar(n.out(), n2, 0.5);
    if (st == CH_OK) st = ch_functions_sub_scalar(m.out(), n, 1.0);
    if (st == CH_OK) st = ch_functions_mul(m2.out(), m, m);
    Var s;
    if (st == CH_OK) st = ch_functions_sum(s.out(), m2);
    if (st == CH_OK) st = ch_functions_div_scalar(out, s, 3.0);
    return st;
  }
  double value(const std::vector<double>& w) const {
    Var W = var_f64({2, 4}, w), p;
    EXPECT_CH_OK(penalty(W, p.out()));
    return data_of(p)[0];
  }
};

TEST_F(DoubleBackprop, GradientPenaltyTrains) {
  Critic c;
  std::vector<double> w = grid(8, -0.9, 0.3);
  // The penalty's gradient with respect to W1 against central differences.
  {
    Var W = var_f64({2, 4}, w), p;
    ASSERT_CH_OK(c.penalty(W, p.out()));
    ASSERT_CH_OK(ch_variable_backward(p, 0));
    std::vector<double> analytic = grad_of(W), numeric;
    for (size_t i = 0; i < w.size(); ++i) {
      std::vector<double> wp = w, wm = w;
      wp[i] += 1e-6;
      wm[i] -= 1e-6;
      numeric.push_back((c.value(wp) - c.value(wm)) / 2e-6);
    }
    EXPECT_TRUE(AllClose(analytic, numeric, 1e-6, 1e-5));
  }
  const double start = c.value(w);
  for (int step = 0; step < 20; ++step) {
    Var W = var_f64({2, 4}, w), p;
    ASSERT_CH_OK(c.penalty(W, p.out()));
    ASSERT_CH_OK(ch_variable_backward(p, 0));
    std::vector<double> g = grad_of(W);
    for (size_t i = 0; i < w.size(); ++i) w[i] -= 0.2 * g[i];
  }
  EXPECT_LT(c.value(w), 0.5 * start) << "start " << start;
}

// ---- user functions: MulAdd z = x * y + w with and without a graph backward

ch_status muladd_forward(void*, ch_context* ctx, ch_array* const* in, size_t) {
  Var x = make_var(in[0]), y = make_var(in[1]), w = make_var(in[2]), xy, z;
  ch_status st = ch_functions_mul(xy.out(), x, y);
  if (st == CH_OK) st = ch_functions_add(z.out(), xy, w);
  Arr data;
  if (st == CH_OK) st = ch_variable_data(data.out(), z);
  if (st == CH_OK) st = ch_context_add_output(ctx, data);
  return st;
}

ch_status muladd_backward(void*, ch_context* ctx, ch_array* const* in, size_t, ch_array* const*,
                          size_t, ch_array* const* gz, size_t) {
  Var x = make_var(in[0]), y = make_var(in[1]), g = make_var(gz[0]), gx, gy;
  ch_status st = ch_functions_mul(gx.out(), g, y);
  if (st == CH_OK) st = ch_functions_mul(gy.out(), g, x);
  Arr a, b;
  if (st == CH_OK) st = ch_variable_data(a.out(), gx);
  if (st == CH_OK) st = ch_variable_data(b.out(), gy);
  if (st == CH_OK) st = ch_context_set_grad_input(ctx, 0, a);
  if (st == CH_OK) st = ch_context_set_grad_input(ctx, 1, b);
  if (st == CH_OK) st = ch_context_set_grad_input(ctx, 2, gz[0]);
  return st;
}

ch_status muladd_graph_backward(void*, ch_context*, ch_variable* const* in, size_t,
                                ch_variable* const*, size_t, ch_variable* const* gz, size_t,
                                ch_variable** gx) {
  ch_status st = ch_functions_mul(&gx[0], gz[0], in[1]);
  if (st == CH_OK) st = ch_functions_mul(&gx[1], gz[0], in[0]);
  if (st == CH_OK) gx[2] = ch_variable_retain(gz[0]);
  return st;
}

Fn muladd(bool graph) {
  ch_function_def def{};
  def.version = CH_FUNCTION_DEF_VERSION;
  def.name = graph ? "MulAdd" : "MulAddArraysOnly";
  def.forward = muladd_forward;
  def.backward = muladd_backward;
  def.graph_backward = graph ? muladd_graph_backward : nullptr;
  Fn f;
  EXPECT_CH_OK(ch_function_new(f.out(), &def));
  return f;
}

TEST_F(DoubleBackprop, UserFunctionWithGraphBackward) {
  Fn f = muladd(true);
  Arr x = sample({2, 2}), y = sample({2, 2}, true), w = sample({2, 2});
  auto build = [&](ch_variable* const* in, ch_variable** out) {
    ch_variable* t = nullptr;
    ch_status st = ch_function_apply(f, in, 3, &t, 1, nullptr);
    if (st == CH_OK) st = ch_functions_mul(out, t, t);  // z^2: a non-zero second derivative
    ch_variable_release(t);
    return st;
  };
  EXPECT_CH_OK(check_double(build, {x, y, w}));
}

// A graph backward that is wrong (gx = gz * x instead of gz * y) is caught.
ch_status wrong_graph_backward(void*, ch_context*, ch_variable* const* in, size_t,
                               ch_variable* const*, size_t, ch_variable* const* gz, size_t,
                               ch_variable** gx) {
  ch_status st = ch_functions_mul(&gx[0], gz[0], in[0]);
  if (st == CH_OK) st = ch_functions_mul(&gx[1], gz[0], in[0]);
  if (st == CH_OK) gx[2] = ch_variable_retain(gz[0]);
  return st;
}

TEST_F(DoubleBackprop, CheckDoubleBackwardCatchesAWrongGraphBackward) {
  ch_function_def def{};
  def.version = CH_FUNCTION_DEF_VERSION;
  def.name = "WrongMulAdd";
  def.forward = muladd_forward;
  def.backward = muladd_backward;
  def.graph_backward = wrong_graph_backward;
  Fn f;
  ASSERT_CH_OK(ch_function_new(f.out(), &def));
  Arr x = sample({2, 2}), y = sample({2, 2}, true), w = sample({2, 2});
  auto build = [&](ch_variable* const* in, ch_variable** out) {
    return ch_function_apply(f, in, 3, out, 1, nullptr);
  };
  EXPECT_CH_ERR(CH_ERR_NOT_CLOSE, check_double(build, {x, y, w}));
}

// Graphs of gradients are freed: the user data of a function applied in the
// forward graph is destroyed once every variable (the gradients' graphs
// included) is released and the roots' grads cleared.
TEST_F(DoubleBackprop, GraphsOfGradientsAreFreed) {
  static int destroyed = 0;
  destroyed = 0;
  ch_function_def def{};
  def.version = CH_FUNCTION_DEF_VERSION;
  def.name = "MulAdd";
  def.forward = muladd_forward;
  def.backward = muladd_backward;
  def.graph_backward = muladd_graph_backward;
  def.user_data = &destroyed;
  def.destroy = [](void* p) { ++*static_cast<int*>(p); };
  {
    Fn f;
    ASSERT_CH_OK(ch_function_new(f.out(), &def));
    Var x = var_f64({2}, {1, 2}), y = var_f64({2}, {3, 4}), w = var_f64({2}, {5, 6}), z, z2, s;
    ch_variable* in[] = {x, y, w};
    ASSERT_CH_OK(ch_function_apply(f, in, 3, z.out(), 1, nullptr));
    ASSERT_CH_OK(ch_functions_mul(z2.out(), z, z));
    ASSERT_CH_OK(ch_functions_sum(s.out(), z2));
    ch_backward_options opt = CH_BACKWARD_OPTIONS_INIT;
    opt.enable_double_backprop = 1;
    ASSERT_CH_OK(ch_variable_backward_ex(s, &opt));
    Var gx, t, gg;
    ASSERT_CH_OK(ch_variable_grad_var(gx.out(), x));
    ASSERT_CH_OK(ch_functions_sum(t.out(), gx));
    ch_variable* ts[] = {t};
    ch_variable* xs[] = {y};
    ASSERT_CH_OK(ch_grad(gg.out(), ts, 1, xs, 1, nullptr, &opt));  // d/dy sum(2 z y) = 2 y x + 2 z
    EXPECT_TRUE(AllClose(data_of(gg), {2 * (3 * 1 + 3 * 1 + 5), 2 * (4 * 2 + 4 * 2 + 6)}));
    for (ch_variable* v : {x.get(), y.get(), w.get()})
      ASSERT_CH_OK(ch_variable_set_grad(v, nullptr));
    EXPECT_EQ(destroyed, 0);
  }
  EXPECT_EQ(destroyed, 1) << "a graph of gradients kept the forward graph alive";
}

TEST_F(DoubleBackprop, DoubleBackpropWithoutGraphBackwardIsAnError) {
  Fn f = muladd(false);
  Var x = var_f64({2}, {1, 2}), y = var_f64({2}, {3, 4}), w = var_f64({2}, {5, 6}), z, s;
  ch_variable* in[] = {x, y, w};
  ASSERT_CH_OK(ch_function_apply(f, in, 3, z.out(), 1, nullptr));
  ASSERT_CH_OK(ch_functions_sum(s.out(), z));
  ch_backward_options opt = CH_BACKWARD_OPTIONS_INIT;
  opt.enable_double_backprop = 1;
  EXPECT_CH_ERR(CH_ERR_GRAPH, ch_variable_backward_ex(s, &opt));
  EXPECT_TRUE(contains(ch_error_message(), "MulAddArraysOnly")) << ch_error_message();
  // The array backward still works, and so does ch_grad without double backprop.
  ASSERT_CH_OK(ch_variable_backward(s, 0));
  EXPECT_TRUE(AllClose(grad_of(x), {3, 4}));
  Var gx;
  ch_variable* outs[] = {s};
  ASSERT_CH_OK(ch_grad(gx.out(), outs, 1, in, 1, nullptr, nullptr));
  EXPECT_TRUE(AllClose(data_of(gx), {3, 4}));
}

TEST_F(DoubleBackprop, VersionOneDefinitionsStillWork) {
  // A definition laid out as version 1 (without graph_backward) is read as such.
  ch_function_def def{};
  def.version = 1;
  def.name = "V1";
  def.forward = muladd_forward;
  def.backward = muladd_backward;
  def.graph_backward = muladd_graph_backward;  // past a v1 struct: must be ignored
  Fn f;
  ASSERT_CH_OK(ch_function_new(f.out(), &def));
  Var x = var_f64({1}, {2}), y = var_f64({1}, {3}), w = var_f64({1}, {1}), z;
  ch_variable* in[] = {x, y, w};
  ASSERT_CH_OK(ch_function_apply(f, in, 3, z.out(), 1, nullptr));
  ch_backward_options opt = CH_BACKWARD_OPTIONS_INIT;
  opt.enable_double_backprop = 1;
  EXPECT_CH_ERR(CH_ERR_GRAPH, ch_variable_backward_ex(z, &opt));
  ASSERT_CH_OK(ch_variable_backward(z, 0));
  EXPECT_TRUE(AllClose(grad_of(y), {2}));
}

TEST_F(DoubleBackprop, EveryOutputsGradReachesAMultiOutputCreator) {
  // Chainer passes every output's grad to the creator: c's grad set by the
  // user joins h's in lstm's backward from h.
  Var cp = var_f64({1, 2}, {0.1, -0.2});
  Var x = var_f64({1, 8}, grid(8, -0.8, 0.2));
  Var c, h;
  ASSERT_CH_OK(ch_functions_lstm(c.out(), h.out(), cp, x));
  Arr gc = f64({1, 2}, {0.5, -1}), gh = f64({1, 2}, {2, 0.25});
  Var gcv = make_var(gc), ghv = make_var(gh), a, b;
  ch_variable* ins[] = {x};
  ch_variable* oc[] = {c};
  ch_variable* oh[] = {h};
  ch_variable* sc[] = {gcv};
  ch_variable* sh[] = {ghv};
  ASSERT_CH_OK(ch_grad(a.out(), oc, 1, ins, 1, sc, nullptr));
  ASSERT_CH_OK(ch_grad(b.out(), oh, 1, ins, 1, sh, nullptr));
  std::vector<double> expected = data_of(a), gb = data_of(b);
  for (size_t i = 0; i < expected.size(); ++i) expected[i] += gb[i];
  ASSERT_CH_OK(ch_variable_set_grad(c, gc));
  ASSERT_CH_OK(ch_variable_set_grad(h, gh));
  ASSERT_CH_OK(ch_variable_backward(h, 0));
  EXPECT_TRUE(AllClose(grad_of(x), expected));
}

}  // namespace
