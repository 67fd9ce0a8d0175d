// The seed's tutorial (003, "Forward/Backward Computation") written with ch.hpp. Expected
// numbers are the ones the seed prints; they are also hand-derivable from
// y = x^2 - 2x + 1, dy/dx = 2x - 2.
#include "test_util.h"

namespace {

using ch_test::expect_values;

TEST(Tutorial, ScalarForwardBackward) {
  // x = Variable(np.array([5], dtype=np.float32)); y = x**2 - 2 * x + 1; y.data -> [16.]
  ch::Variable x(ch::Array(std::vector<float>{5}, {1}));
  ch::Variable y = x * x - 2 * x + 1;
  EXPECT_EQ(y.dtype(), CH_FLOAT32);
  expect_values(y.data(), {1}, {16});
  EXPECT_FALSE(x.grad().valid());  // no gradient before backward

  // y.backward(); x.grad -> [8.]
  y.backward();
  expect_values(x.grad(), {1}, {8});
  EXPECT_EQ(x.grad().dtype(), CH_FLOAT32);
}

TEST(Tutorial, PowMatchesProduct) {
  // The seed writes x**2: ch::pow(x, 2) gives the same graph value and gradient.
  ch::Variable x(ch::Array(std::vector<float>{5}, {1}));
  ch::Variable y = ch::pow(x, 2) - 2 * x + 1;
  expect_values(y.data(), {1}, {16});
  y.backward();
  expect_values(x.grad(), {1}, {8});
}

TEST(Tutorial, RetainGradKeepsIntermediateGradients) {
  // z = 2*x; y = x**2 - z + 1; y.backward(retain_grad=True); z.grad -> [-1.]
  ch::Variable x(ch::Array(std::vector<float>{5}, {1}));
  ch::Variable z = 2 * x;
  ch::Variable y = x * x - z + 1;
  y.backward(/*retain_grad=*/true);
  expect_values(z.grad(), {1}, {-1});
  expect_values(x.grad(), {1}, {8});
}

TEST(Tutorial, IntermediateGradientsFreedWithoutRetainGrad) {
  ch::Variable x(ch::Array(std::vector<float>{5}, {1}));
  ch::Variable z = 2 * x;
  ch::Variable y = x * x - z + 1;
  y.backward();
  EXPECT_FALSE(z.grad().valid());
  expect_values(x.grad(), {1}, {8});
}

TEST(Tutorial, MultiElementNeedsInitialError) {
  // x = [[1,2,3],[4,5,6]]; y = x**2 - 2*x + 1; y.grad = ones; y.backward();
  // x.grad -> [[0,2,4],[6,8,10]] (= 2x - 2).
  ch::Variable x(ch::Array(std::vector<float>{1, 2, 3, 4, 5, 6}, {2, 3}));
  ch::Variable y = x * x - 2 * x + 1;
  expect_values(y.data(), {2, 3}, {0, 1, 4, 9, 16, 25});
  y.set_grad(ch::Array::ones({2, 3}));
  y.backward();
  expect_values(x.grad(), {2, 3}, {0, 2, 4, 6, 8, 10});
}

TEST(Tutorial, BackwardTwiceStartsAfresh) {
  // Chainer 1.0 semantics: every backward recomputes the root's gradient, no accumulation.
  ch::Variable x(ch::Array(std::vector<double>{5}, {1}));
  ch::Variable y = x * x - 2 * x + 1;
  y.backward();
  y.backward();
  expect_values(x.grad(), {1}, {8});
}

TEST(Tutorial, CreatorRecordsTheGraph) {
  ch::Variable x(ch::Array(std::vector<float>{5}, {1}));
  EXPECT_FALSE(x.creator().valid());  // a root
  ch::Variable y = x * x;
  ch::Function f = y.creator();
  ASSERT_TRUE(f.valid());
  EXPECT_FALSE(f.name().empty());
  ASSERT_EQ(f.input_count(), 2u);
  ASSERT_EQ(f.output_count(), 1u);
  expect_values(f.input(0).data(), {1}, {5});
  expect_values(f.outputs()[0].data(), {1}, {25});
}

TEST(Tutorial, VolatileRecordsNoHistory) {
  ch::Variable x(ch::Array(std::vector<float>{1, 2}, {2}), /*is_volatile=*/true);
  EXPECT_TRUE(x.is_volatile());
  ch::Variable y = x * 3 + 1;
  EXPECT_TRUE(y.is_volatile());
  EXPECT_FALSE(y.creator().valid());
  expect_values(y.data(), {2}, {4, 7});
}

TEST(Tutorial, UnchainBackwardStopsBackpropagation) {
  // Truncated BPTT: y = 2x; z = 3y; after y.unchain_backward(), backward from z reaches y
  // (dz/dy = 3) and no further.
  ch::Variable x(ch::Array(std::vector<float>{1}, {1}));
  ch::Variable y = 2 * x;
  ch::Variable z = 3 * y;
  y.unchain_backward();
  EXPECT_FALSE(y.creator().valid());
  z.backward(/*retain_grad=*/true);
  expect_values(y.grad(), {1}, {3});
  EXPECT_FALSE(x.grad().valid());
}

}  // namespace
