// Functions written in C++ by subclassing ch::FunctionBase: the seed's MulAdd, ExpAdd
// (000, "Define your own function") and EltwiseParamProduct (003, section 1.4.3). Values are
// hand-derived from the formulas; gradients are checked against numerical ones.
#include <cmath>

#include "test_util.h"

namespace {

using ch::Array;
using ch_test::elementwise;
using ch_test::expect_values;
using Arrays = std::vector<ch::Array>;

// w = x * y + z
class MulAdd : public ch::FunctionBase {
 public:
  MulAdd() : FunctionBase("MulAdd") {}
  Arrays forward(const Arrays& in) override {
    return {elementwise([](auto x, auto y, auto z) { return x * y + z; }, in[0], in[1], in[2])};
  }
  Arrays backward(const Arrays& in, const Arrays&, const Arrays& gout) override {
    const Array& gw = gout[0];
    auto mul = [](auto a, auto b) { return a * b; };
    return {elementwise(mul, in[1], gw), elementwise(mul, in[0], gw), gw};  // gz = gw, no copy
  }
};

// z = exp(x) + exp(y)
class ExpAdd : public ch::FunctionBase {
 public:
  ExpAdd() : FunctionBase("ExpAdd") {}
  Arrays forward(const Arrays& in) override {
    return {elementwise([](auto x, auto y) { return std::exp(x) + std::exp(y); }, in[0], in[1])};
  }
  Arrays backward(const Arrays& in, const Arrays&, const Arrays& gout) override {
    auto g = [](auto x, auto gz) { return std::exp(x) * gz; };
    return {elementwise(g, in[0], gout[0]), elementwise(g, in[1], gout[0])};
  }
};

// y = w * x with a parameter w; backward accumulates gw += gy * x (the seed's 1.4.3).
class EltwiseParamProduct : public ch::FunctionBase {
 public:
  explicit EltwiseParamProduct(const Array& w)
      : FunctionBase("EltwiseParamProduct"), w_(w), gw_(Array::zeros_like(w)) {
    add_parameter("w", w_, gw_);
  }
  Arrays forward(const Arrays& in) override {
    return {elementwise([](auto w, auto x) { return w * x; }, w_, in[0])};
  }
  Arrays backward(const Arrays& in, const Arrays&, const Arrays& gout) override {
    const Array& x = in[0];
    const Array& gy = gout[0];
    ch::dispatch_float(gw_.dtype(), [&](auto tag) {
      using T = decltype(tag);
      T* gw = gw_.data<T>();
      for (int64_t i = 0; i < gw_.size(); ++i) gw[i] += gy.data<T>()[i] * x.data<T>()[i];
    });
    return {elementwise([](auto gy, auto w) { return gy * w; }, gy, w_)};
  }
  const Array& gw() const { return gw_; }

 private:
  Array w_, gw_;
};

// Forward keeps exp(x) for backward with save_for_backward (per application).
class SavingExp : public ch::FunctionBase {
 public:
  SavingExp() : FunctionBase("SavingExp") {}
  Arrays forward(const Arrays& in) override {
    Array y = elementwise([](auto x) { return std::exp(x); }, in[0]);
    save_for_backward(y);
    return {y};
  }
  Arrays backward(const Arrays&, const Arrays&, const Arrays& gout) override {
    Arrays s = saved();
    EXPECT_EQ(s.size(), 1u);
    return {elementwise([](auto y, auto gy) { return y * gy; }, s.at(0), gout[0])};
  }
};

// Two outputs: (2x, x*x).
class TwoOutputs : public ch::FunctionBase {
 public:
  TwoOutputs() : FunctionBase("TwoOutputs") {}
  Arrays forward(const Arrays& in) override {
    return {elementwise([](auto x) { return 2 * x; }, in[0]),
            elementwise([](auto x) { return x * x; }, in[0])};
  }
  Arrays backward(const Arrays& in, const Arrays&, const Arrays& gout) override {
    return {elementwise([](auto x, auto g1, auto g2) { return 2 * g1 + 2 * x * g2; }, in[0],
                        gout[0], gout[1])};
  }
};

// Only a forward: the default backward returns no gradient (not differentiable).
class ForwardOnly : public ch::FunctionBase {
 public:
  ForwardOnly() : FunctionBase("ForwardOnly") {}
  Arrays forward_cpu(const Arrays& in) override { return {in[0].copy()}; }
};

TEST(UserFunction, MulAddValuesAndGradients) {
  // w = x*y + z = [1*3+5, 2*4+6] = [8, 14]; with gw = ones: gx = y, gy = x, gz = 1.
  MulAdd f;
  ch::Variable x(Array(std::vector<float>{1, 2}, {2}));
  ch::Variable y(Array(std::vector<float>{3, 4}, {2}));
  ch::Variable z(Array(std::vector<float>{5, 6}, {2}));
  ch::Variable w = f(x, y, z);
  expect_values(w.data(), {2}, {8, 14});
  EXPECT_EQ(w.creator().name(), "MulAdd");
  EXPECT_EQ(w.creator().input_count(), 3u);
  w.set_grad(Array::ones({2}));
  w.backward();
  expect_values(x.grad(), {2}, {3, 4});
  expect_values(y.grad(), {2}, {1, 2});
  expect_values(z.grad(), {2}, {1, 1});

  // apply() is the same call returning every output.
  std::vector<ch::Variable> outs = f.apply({x, y, z});
  ASSERT_EQ(outs.size(), 1u);
  expect_values(outs[0].data(), {2}, {8, 14});
  // A recorded application can be applied again: a new node with the same callbacks.
  expect_values(w.creator()(x, x, x).data(), {2}, {2, 6});  // x*x + x
}

TEST(UserFunction, MulAddPassesCheckBackward) {
  MulAdd f;
  for (ch_dtype dt : {CH_FLOAT64, CH_FLOAT32}) {
    Arrays in = {ch_test::random_array({3, 2}, dt, 10), ch_test::random_array({3, 2}, dt, 11),
                 ch_test::random_array({3, 2}, dt, 12)};
    Array gy = ch_test::random_array({3, 2}, dt, 13);
    if (dt == CH_FLOAT64)
      ch::check_backward(f, in, {gy});  // Chainer's defaults: eps 1e-3, atol 1e-5, rtol 1e-4
    else
      ch::check_backward(f, in, {gy}, 1e-2, 1e-3, 1e-2);
  }
}

TEST(UserFunction, ExpAddValuesAndCheckBackward) {
  // exp(0) + exp(1) = 1 + e; exp(1) + exp(-1) = 2 cosh(1).
  ExpAdd f;
  ch::Variable x(Array(std::vector<double>{0, 1}, {2}));
  ch::Variable y(Array(std::vector<double>{1, -1}, {2}));
  ch::Variable z = f(x, y);
  expect_values(z.data(), {2}, {1 + std::exp(1.0), 2 * std::cosh(1.0)}, 1e-12);
  ch::sum(z).backward();
  expect_values(x.grad(), {2}, {1, std::exp(1.0)}, 1e-12);
  expect_values(y.grad(), {2}, {std::exp(1.0), std::exp(-1.0)}, 1e-12);

  ch::check_backward(f, {ch_test::random_array({4, 3}, CH_FLOAT64, 20),
                         ch_test::random_array({4, 3}, CH_FLOAT64, 21)});
  ch::check_backward(f,
                     {ch_test::random_array({4, 3}, CH_FLOAT32, 22),
                      ch_test::random_array({4, 3}, CH_FLOAT32, 23)},
                     {}, 1e-2, 1e-3, 1e-2);
}

TEST(UserFunction, EltwiseParamProductAccumulatesParameterGradient) {
  Array w = ch_test::random_array({4, 3}, CH_FLOAT32, 30);
  EltwiseParamProduct f(w);
  std::vector<ch::Parameter> params = f.parameters();
  ASSERT_EQ(params.size(), 1u);
  EXPECT_EQ(params[0].name, "w");
  EXPECT_EQ(params[0].param.raw_data(), w.raw_data());  // shared, not copied
  EXPECT_EQ(params[0].grad.raw_data(), f.gw().raw_data());

  Array xa = ch_test::random_array({4, 3}, CH_FLOAT32, 31);
  Array gya = ch_test::random_array({4, 3}, CH_FLOAT32, 32);
  ch::Variable x(xa);
  ch::Variable y = f(x);
  // y = w * x
  ch::assert_allclose(y.data(), elementwise([](auto a, auto b) { return a * b; }, w, xa));
  y.set_grad(gya);
  y.backward();
  // gw = gy * x (gw started at zero), gx = gy * w
  ch::assert_allclose(f.gw(), elementwise([](auto a, auto b) { return a * b; }, gya, xa));
  ch::assert_allclose(x.grad(), elementwise([](auto a, auto b) { return a * b; }, gya, w));
  ch::assert_allclose(params[0].grad, f.gw());  // the registered gradient is the same array
  // The application (graph node) shares the object's parameters.
  std::vector<ch::Parameter> node_params = y.creator().parameters();
  ASSERT_EQ(node_params.size(), 1u);
  EXPECT_EQ(node_params[0].grad.raw_data(), f.gw().raw_data());
}

TEST(UserFunction, ParameterGradientSumsOverApplications) {
  // Copy on call: two applications share w and gw, so gw = gy*x1 + gy*x2 = [1+3, 2+4] with
  // gy = ones; gx1 = gx2 = w = [10, 20].
  Array w(std::vector<double>{10, 20}, {2});
  EltwiseParamProduct f(w);
  ch::Variable x1(Array(std::vector<double>{1, 2}, {2}));
  ch::Variable x2(Array(std::vector<double>{3, 4}, {2}));
  ch::Variable s = ch::sum(f(x1) + f(x2));
  expect_values(s.data(), {}, {10 + 40 + 30 + 80});
  s.backward();
  expect_values(f.gw(), {2}, {4, 6});
  expect_values(x1.grad(), {2}, {10, 20});
  expect_values(x2.grad(), {2}, {10, 20});
}

TEST(UserFunction, EltwiseParamProductPassesCheckBackward) {
  EltwiseParamProduct f(ch_test::random_array({5}, CH_FLOAT64, 40));
  ch::check_backward(f, {ch_test::random_array({5}, CH_FLOAT64, 41)});
}

TEST(UserFunction, SavedArraysArePerApplication) {
  SavingExp f;
  ch::Variable a(Array(std::vector<double>{0, 1}, {2}));
  ch::Variable b(Array(std::vector<double>{2}, {1}));
  ch::Variable ya = f(a);
  ch::Variable yb = f(b);
  ya.set_grad(Array::ones_like(ya.data()));
  ya.backward();
  yb.backward();
  expect_values(a.grad(), {2}, {1, std::exp(1.0)}, 1e-12);
  expect_values(b.grad(), {1}, {std::exp(2.0)}, 1e-12);
  ch::check_backward(f, {ch_test::random_array({3}, CH_FLOAT64, 50)});
}

TEST(UserFunction, MultipleOutputs) {
  TwoOutputs f;
  ch::Variable x(Array(std::vector<double>{1, 3}, {2}));
  std::vector<ch::Variable> ys = f.apply({x});
  ASSERT_EQ(ys.size(), 2u);
  expect_values(ys[0].data(), {2}, {2, 6});
  expect_values(ys[1].data(), {2}, {1, 9});
  // Only ys[1] gets an initial error: the other output's gradient is zeros, gx = 2x = [2, 6].
  ys[1].set_grad(Array::ones_like(ys[1].data()));
  ys[1].backward();
  expect_values(x.grad(), {2}, {2, 6});
  // sum(y0) + sum(y1): gx = 2 + 2x = [4, 8]
  ch::Variable s = ch::sum(ys[0]) + ch::sum(ys[1]);
  s.backward();
  expect_values(x.grad(), {2}, {4, 8});

  try {
    f(x);
    FAIL() << "operator() on a two-output function must throw";
  } catch (const ch::Error& e) {
    EXPECT_EQ(e.status(), CH_ERR_INVALID_ARGUMENT);
    EXPECT_TRUE(ch_test::contains(e.what(), "apply()")) << e.what();
  }
  ch::check_backward(f, {ch_test::random_array({3}, CH_FLOAT64, 60)});
}

TEST(UserFunction, DefaultBackwardGivesNoGradient) {
  ForwardOnly f;
  ch::Variable x(Array(std::vector<float>{1, 2}, {2}));
  ch::Variable y = f(x) * 2;
  expect_values(y.data(), {2}, {2, 4});
  y.set_grad(Array::ones({2}));
  y.backward();
  EXPECT_FALSE(x.grad().valid());
}

TEST(UserFunction, SharedOwnershipKeepsObjectAliveWithItsGraph) {
  struct Tracked : MulAdd {
    explicit Tracked(bool* destroyed) : destroyed_(destroyed) {}
    ~Tracked() override { *destroyed_ = true; }
    bool* destroyed_;
  };
  bool destroyed = false;
  ch::Variable x(Array(std::vector<float>{2}, {1}));
  ch::Variable w;
  {
    auto f = std::make_shared<Tracked>(&destroyed);
    w = (*f)(x, x, x);  // w = x*x + x
  }
  EXPECT_FALSE(destroyed);  // the graph node keeps the object alive
  w.backward();
  expect_values(x.grad(), {1}, {5});  // d(x^2 + x)/dx = 2x + 1
  w = ch::Variable();
  EXPECT_TRUE(destroyed);  // the last node is gone
}

}  // namespace
