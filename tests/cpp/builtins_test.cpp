// Operators and free functions of ch.hpp over the built-in functions. Expected values are
// hand-derived (stated next to each check); gradients are checked numerically.
#include <cmath>

#include "test_util.h"

namespace {

using ch_test::expect_values;

ch::Variable var(std::vector<double> values, const ch::Shape& shape) {
  return ch::Variable(ch::Array(values, shape));
}

TEST(Builtins, ScalarOperatorsOnBothSides) {
  ch::Variable x = var({1, 2, 4}, {3});
  expect_values((x + 1).data(), {3}, {2, 3, 5});
  expect_values((1 + x).data(), {3}, {2, 3, 5});
  expect_values((x - 1).data(), {3}, {0, 1, 3});
  expect_values((8 - x).data(), {3}, {7, 6, 4});  // rsub
  expect_values((x * 3).data(), {3}, {3, 6, 12});
  expect_values((3 * x).data(), {3}, {3, 6, 12});
  expect_values((x / 2).data(), {3}, {0.5, 1, 2});
  expect_values((4 / x).data(), {3}, {4, 2, 1});  // rdiv
  expect_values((-x).data(), {3}, {-1, -2, -4});
  expect_values(ch::neg(x).data(), {3}, {-1, -2, -4});
}

TEST(Builtins, VariableOperatorsAndBroadcasting) {
  ch::Variable a = var({1, 2, 3, 4, 5, 6}, {2, 3});
  ch::Variable b = var({10, 20, 30}, {3});
  expect_values((a + b).data(), {2, 3}, {11, 22, 33, 14, 25, 36});
  expect_values((a - b).data(), {2, 3}, {-9, -18, -27, -6, -15, -24});
  expect_values((a * b).data(), {2, 3}, {10, 40, 90, 40, 100, 180});
  expect_values((b / a).data(), {2, 3}, {10, 10, 10, 2.5, 4, 5});
  expect_values(ch::add(a, b).data(), {2, 3}, {11, 22, 33, 14, 25, 36});
  expect_values(ch::div(a, a).data(), {2, 3}, {1, 1, 1, 1, 1, 1});

  // d(sum(a*b))/db = column sums of a = [5, 7, 9] (broadcast backward sums over axis 0).
  ch::Variable s = ch::sum(a * b);
  EXPECT_EQ(s.shape(), ch::Shape{});
  s.backward();
  expect_values(b.grad(), {3}, {5, 7, 9});
  expect_values(a.grad(), {2, 3}, {10, 20, 30, 10, 20, 30});
}

TEST(Builtins, PowExpLog) {
  ch::Variable x = var({1, 2, 4}, {3});
  expect_values(ch::pow(x, 2).data(), {3}, {1, 4, 16});
  expect_values(ch::pow(2, x).data(), {3}, {2, 4, 16});  // rpow
  expect_values(ch::exp(x).data(), {3}, {std::exp(1.0), std::exp(2.0), std::exp(4.0)}, 1e-9);
  expect_values(ch::log(x).data(), {3}, {0, std::log(2.0), std::log(4.0)}, 1e-12);

  // d/dx sum(x^3) = 3x^2 = [3, 12, 48]
  ch::sum(ch::pow(x, 3)).backward();
  expect_values(x.grad(), {3}, {3, 12, 48}, 1e-9);
}

TEST(Builtins, SumAlongAxes) {
  ch::Variable x = var({1, 2, 3, 4, 5, 6}, {2, 3});
  expect_values(ch::sum(x).data(), {}, {21});
  expect_values(ch::sum(x, 0).data(), {3}, {5, 7, 9});
  expect_values(ch::sum(x, 1, /*keepdims=*/true).data(), {2, 1}, {6, 15});
  expect_values(ch::sum(x, -1).data(), {2}, {6, 15});
}

TEST(Builtins, ReshapeBroadcastIdentity) {
  ch::Variable x = var({1, 2, 3, 4, 5, 6}, {2, 3});
  expect_values(ch::reshape(x, {3, 2}).data(), {3, 2}, {1, 2, 3, 4, 5, 6});
  expect_values(ch::reshape(x, {-1}).data(), {6}, {1, 2, 3, 4, 5, 6});
  expect_values(ch::identity(x).data(), {2, 3}, {1, 2, 3, 4, 5, 6});

  ch::Variable r = var({1, 2, 3}, {3});
  ch::Variable b = ch::broadcast_to(r, {2, 3});
  expect_values(b.data(), {2, 3}, {1, 2, 3, 1, 2, 3});
  b.set_grad(ch::Array(std::vector<double>{1, 2, 3, 4, 5, 6}, {2, 3}));
  b.backward();
  expect_values(r.grad(), {3}, {5, 7, 9});  // summed over the broadcast axis
}

TEST(Builtins, CompositeGraphPassesCheckBackward) {
  // f(a, b) = exp(a) * b / 2 + log(b) - a^3 + 1 / b, and sum(a * b, axis 1), in float64.
  ch::Array a = ch_test::random_array({3, 4}, CH_FLOAT64, 1);
  ch::Array b = ch_test::random_array({3, 4}, CH_FLOAT64, 2, 0.5, 2.0);
  ch::check_backward(
      [](const std::vector<ch::Variable>& in) {
        const ch::Variable& x = in[0];
        const ch::Variable& y = in[1];
        return std::vector<ch::Variable>{ch::exp(x) * y / 2 + ch::log(y) - ch::pow(x, 3) + 1 / y,
                                         ch::sum(x * y, 1)};
      },
      {a, b});
  // The same with explicit grad_outputs.
  ch::check_backward(
      [](const std::vector<ch::Variable>& in) {
        return std::vector<ch::Variable>{ch::pow(2, in[0]) - in[0] * in[0]};
      },
      {a}, {ch_test::random_array({3, 4}, CH_FLOAT64, 3)});
}

}  // namespace
