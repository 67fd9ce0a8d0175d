// ch::graph_dot / Variable::graph_dot and Function::forward (the seed's section 1.4.4
// idiom: `func = y.creator; numerical_grad(lambda: func.forward((x.data,)), ...)`).
// References: the analytic gradient of the same graph (backward), checked numerically.
#include "test_util.h"

namespace {

using ch::Array;
using ch::Variable;
using Arrays = std::vector<ch::Array>;

size_t count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t p = s.find(what); p != std::string::npos; p = s.find(what, p + 1)) ++n;
  return n;
}

TEST(GraphDot, MlpNodesAndEdges) {
  ch::Function l1 = ch::F::Linear(3, 4), l2 = ch::F::Linear(4, 2);
  Variable x(ch_test::random_array({5, 3}, CH_FLOAT32, 3));
  Variable t(Array::from<int32_t>({0, 1, 1, 0, 1}, {5}));
  Variable loss = ch::F::softmax_cross_entropy(l2(ch::F::relu(l1(x))), t);
  std::string dot = loss.graph_dot("loss");
  EXPECT_EQ(count(dot, "shape=\"box\""), 4u) << dot;
  EXPECT_EQ(count(dot, "shape=\"oval\""), 10u) << dot;
  EXPECT_EQ(count(dot, "->"), 13u) << dot;
  EXPECT_TRUE(ch_test::contains(dot, "label=\"loss\\n(), float32\"")) << dot;
  EXPECT_TRUE(ch_test::contains(dot, "label=\"W\\n(4, 3), float32\"")) << dot;
  ch::GraphDotOptions o;
  o.show_parameters = false;
  o.rankdir = "LR";
  std::string bare = ch::graph_dot({loss}, o);
  EXPECT_EQ(count(bare, "->"), 9u) << bare;
  o.rankdir = "diagonal";
  EXPECT_THROW(ch::graph_dot({loss}, o), ch::Error);
}

TEST(FunctionForward, SeedIdiomOnRelu) {
  // The seed's TestReLU.test_backward_cpu, in C++.
  Variable x(ch_test::random_array({3, 2}, CH_FLOAT32, 11));
  Variable y = ch::F::relu(x);
  y.set_grad(ch_test::random_array({3, 2}, CH_FLOAT32, 12));
  y.backward();
  ch::Function func = y.creator();
  auto f = [&] { return func.forward({x.data()}); };
  Arrays gx = ch::numerical_grad(f, {x.data()}, {y.grad()});
  ch::assert_allclose(gx[0], x.grad(), 1e-3, 1e-3);
}

TEST(FunctionForward, LinearAndSoftmaxCrossEntropyMatchTheGraph) {
  ch::Function l = ch::F::Linear(3, 4, 1, 0.5, false, Array(), Array(), CH_FLOAT64);
  Variable x(ch_test::random_array({2, 3}, CH_FLOAT64, 21));
  Variable t(Array::from<int32_t>({3, 0}, {2}));
  Variable h = l(x);
  Variable loss = ch::F::softmax_cross_entropy(h, t);
  ch::assert_allclose(h.creator().forward({x.data()})[0], h.data(), 0, 0);
  ch::assert_allclose(loss.creator().forward({h.data(), t.data()})[0], loss.data(), 0, 0);
  loss.backward();
  ch::Function fl = loss.creator(), fh = h.creator();
  Arrays gx = ch::numerical_grad(
      [&] {
        return fl.forward({fh.forward({x.data()})[0], t.data()});
      },
      {x.data()}, {Array::ones({}, CH_FLOAT64)});
  ch::assert_allclose(gx[0], x.grad(), 1e-8, 1e-6);
  // A wrong arity is an error that says so.
  try {
    fl.forward({x.data()});
    FAIL() << "expected an error";
  } catch (const ch::Error& e) {
    EXPECT_TRUE(ch_test::contains(e.what(), "takes 2 inputs, got 1")) << e.what();
  }
}

}  // namespace
