// ch::numerical_grad, ch::allclose / assert_allclose and ch::check_backward catching a
// wrong backward. References: d/dx sum(gy * x^2) = 2 x gy (hand-derived); the seed's
// numerical_grad example (003, section 1.4.4) uses f = x * x with gy = ones.
#include "test_util.h"

namespace {

using ch::Array;
using ch_test::elementwise;
using ch_test::expect_values;
using Arrays = std::vector<ch::Array>;

TEST(GradientCheck, NumericalGradOfSquare) {
  for (ch_dtype dt : {CH_FLOAT32, CH_FLOAT64}) {
    Array x = ch_test::random_array({4, 3}, dt, 70);
    Array gy = ch::Array::ones({4, 3}, dt);
    Array before = x.copy();
    Arrays gx = ch::numerical_grad(
        [&] { return Arrays{elementwise([](auto a) { return a * a; }, x)}; }, {x}, {gy});
    ASSERT_EQ(gx.size(), 1u);
    EXPECT_EQ(gx[0].dtype(), dt);
    EXPECT_EQ(gx[0].shape(), (ch::Shape{4, 3}));
    Array expected = elementwise([](auto a) { return 2 * a; }, x);
    EXPECT_TRUE(ch::allclose(gx[0], expected, dt == CH_FLOAT32 ? 1e-2 : 1e-8, 1e-3)) << gx[0];
    ch::assert_allclose(x, before, 0, 0);  // inputs restored exactly
  }
}

TEST(GradientCheck, NumericalGradWeightsByGradOutputs) {
  // f(x, y) = (x*y,), gy = [1, 2]: df/dx = y*gy = [3, 8], df/dy = x*gy = [1, 4].
  Array x(std::vector<double>{1, 2}, {2});
  Array y(std::vector<double>{3, 4}, {2});
  Arrays g = ch::numerical_grad(
      [&] { return Arrays{elementwise([](auto a, auto b) { return a * b; }, x, y)}; }, {x, y},
      {Array(std::vector<double>{1, 2}, {2})}, 1e-4);
  expect_values(g[0], {2}, {3, 8}, 1e-6);
  expect_values(g[1], {2}, {1, 4}, 1e-6);
}

TEST(GradientCheck, AllcloseAndAssertAllclose) {
  Array a(std::vector<double>{1, 2, 3}, {3});
  Array b(std::vector<double>{1, 2, 3.001}, {3});
  EXPECT_TRUE(ch::allclose(a, a));
  EXPECT_FALSE(ch::allclose(a, b));
  EXPECT_TRUE(ch::allclose(a, b, 1e-2, 0));
  ch::assert_allclose(a, b, 0, 1e-3);
  try {
    ch::assert_allclose(a, b);
    FAIL() << "assert_allclose must throw";
  } catch (const ch::Error& e) {
    EXPECT_EQ(e.status(), CH_ERR_NOT_CLOSE);
    EXPECT_STREQ(e.status_name(), "CH_ERR_NOT_CLOSE");
    EXPECT_TRUE(ch_test::contains(e.what(), "2")) << e.what();  // names the worst index
  }
  // Different shapes are an error, not "not close".
  try {
    ch::allclose(a, Array(std::vector<double>{1, 2}, {2}));
    FAIL() << "allclose of different shapes must throw";
  } catch (const ch::Error& e) {
    EXPECT_EQ(e.status(), CH_ERR_SHAPE);
  }
}

// MulAdd with a wrong gradient for x (gx = gw instead of y * gw).
class BrokenMulAdd : public ch::FunctionBase {
 public:
  BrokenMulAdd() : FunctionBase("BrokenMulAdd") {}
  Arrays forward(const Arrays& in) override {
    return {elementwise([](auto x, auto y, auto z) { return x * y + z; }, in[0], in[1], in[2])};
  }
  Arrays backward(const Arrays& in, const Arrays&, const Arrays& gout) override {
    const Array& gw = gout[0];
    return {gw, elementwise([](auto x, auto g) { return x * g; }, in[0], gw), gw};
  }
};

TEST(GradientCheck, CheckBackwardCatchesAWrongGradient) {
  BrokenMulAdd f;
  Arrays in = {ch_test::random_array({3}, CH_FLOAT64, 80),
               ch_test::random_array({3}, CH_FLOAT64, 81, 2.0, 3.0),
               ch_test::random_array({3}, CH_FLOAT64, 82)};
  try {
    ch::check_backward(f, in);
    FAIL() << "check_backward must reject a wrong gradient";
  } catch (const ch::Error& e) {
    EXPECT_EQ(e.status(), CH_ERR_NOT_CLOSE);
    EXPECT_TRUE(ch_test::contains(e.what(), "input 0")) << e.what();
  }
  // Through the ch::Function handle as well.
  EXPECT_THROW(ch::check_backward(f.function(), in), ch::Error);
}

}  // namespace
