// Double backprop through the C++ layer: Variable::backward(retain, true) and
// grad_var(), ch::grad, NoBackpropMode, and a FunctionBase with backward_graph
// (MulAdd) differentiated twice. Expected values are derived by hand.
#include <cmath>

#include "test_util.h"

namespace {

using ch::Array;
using ch::Variable;

Variable var(const std::vector<double>& v) {
  return Variable(Array::from<double>(v, {static_cast<int64_t>(v.size())}));
}

// w = x * y + z, its backward over variables given as well.
class MulAdd : public ch::FunctionBase {
 public:
  MulAdd() : FunctionBase("MulAdd", true) {}
  std::vector<Array> forward(const std::vector<Array>& in) override {
    Variable x(in[0]), y(in[1]), z(in[2]);
    ch::NoBackpropMode plain;
    return {(x * y + z).data()};
  }
  std::vector<Array> backward(const std::vector<Array>& in, const std::vector<Array>&,
                              const std::vector<Array>& gout) override {
    ch::NoBackpropMode plain;
    Variable x(in[0]), y(in[1]), g(gout[0]);
    return {(g * y).data(), (g * x).data(), gout[0]};
  }
  std::vector<Variable> backward_graph(const std::vector<Variable>& in,
                                       const std::vector<Variable>&,
                                       const std::vector<Variable>& gout) override {
    return {gout[0] * in[1], gout[0] * in[0], gout[0]};
  }
};

TEST(DoubleBackpropCpp, GradVarOfCube) {
  Variable x = var({0.5, -1.0, 2.0});
  Variable y = ch::sum(x * x * x);
  y.backward(false, true);
  Variable gx = x.grad_var();
  ch_test::expect_values(gx.data(), {3}, {0.75, 3.0, 12.0});
  x.clear_grad();
  std::vector<Variable> h = ch::grad({ch::sum(gx)}, {x});
  ch_test::expect_values(h[0].data(), {3}, {3.0, -6.0, 12.0});
}

TEST(DoubleBackpropCpp, UserFunctionTwiceDifferentiable) {
  auto f = std::make_shared<MulAdd>();
  Variable x = var({1.0, 2.0}), y = var({3.0, -1.0}), z = var({0.5, 0.5});
  Variable w = (*f)(x, y, z);
  Variable s = ch::sum(w * w);  // ds/dx = 2 w y, d2s/dx2 = 2 y^2
  std::vector<Variable> g = ch::grad({s}, {x}, {}, true);
  ch_test::expect_values(g[0].data(), {2}, {2 * 3.5 * 3.0, 2 * -1.5 * -1.0});
  std::vector<Variable> gg = ch::grad({ch::sum(g[0])}, {x});
  ch_test::expect_values(gg[0].data(), {2}, {18.0, 2.0});
}

TEST(DoubleBackpropCpp, NoBackpropModeRecordsNothing) {
  Variable x = var({1.0});
  {
    ch::NoBackpropMode off;
    EXPECT_FALSE(static_cast<bool>(ch::exp(x).creator()));
  }
  EXPECT_TRUE(static_cast<bool>(ch::exp(x).creator()));
}

}  // namespace
