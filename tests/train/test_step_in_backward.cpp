// ch_optimizer_set_step_in_backward: plain SGD's step taken inside backward
// (a Linear layer's weight stepped by one GEMM into W) must give the same
// parameters as the usual zero_grads / backward / update loop, keep the usual
// path where it cannot apply (a layer applied twice, other optimizers), and
// refuse what would read the gradients it never wrote.
#include <cmath>

#include "train_test_util.h"

using namespace train_test;

namespace {

class StepInBackward : public CapiTest {
 protected:
  // One library for every product, so both loops round alike.
  void SetUp() override {
    CapiTest::SetUp();
    ASSERT_CH_OK(ch_config_set_gemm("openblas"));
  }
  void TearDown() override {
    EXPECT_CH_OK(ch_config_set_gemm("auto"));
    CapiTest::TearDown();
  }
};

// Deterministic values in [-0.5, 0.5).
std::vector<double> pattern(size_t n, unsigned seed) {
  std::vector<double> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = std::fmod((i + 1) * 0.6180339887 * (seed + 1), 1.0) - 0.5;
  return v;
}

Fn linear(int64_t in, int64_t out, unsigned seed) {
  Arr W = make_array(CH_FLOAT32, {out, in}, pattern(static_cast<size_t>(in * out), seed));
  Arr b = make_array(CH_FLOAT32, {out}, pattern(static_cast<size_t>(out), seed + 7));
  Fn f;
  EXPECT_CH_OK(ch_functions_linear_new(f.out(), in, out, CH_FLOAT32, 1, 0, 0, W, b));
  return f;
}

Var apply(ch_function* f, ch_variable* x) {
  Var y;
  EXPECT_CH_OK(ch_function_apply(f, &x, 1, y.out(), 1, nullptr));
  return y;
}

// 20-30-30-5 MLP with ReLU and softmax cross entropy; with `shared`, the
// middle layer is applied twice (weights shared).
struct Net {
  Fn l1 = linear(20, 30, 1), l2 = linear(30, 30, 2), l3 = linear(30, 5, 3);
  FnSet set;
  bool shared;
  explicit Net(bool shared_middle = false) : shared(shared_middle) {
    EXPECT_CH_OK(ch_function_set_new(set.out()));
    EXPECT_CH_OK(ch_function_set_add_function(set, "l1", l1));
    EXPECT_CH_OK(ch_function_set_add_function(set, "l2", l2));
    EXPECT_CH_OK(ch_function_set_add_function(set, "l3", l3));
  }
  Var loss(int step) const {
    Var x = make_var(f32({8, 20}, pattern(160, 11 + static_cast<unsigned>(step))));
    EXPECT_CH_OK(ch_variable_set_requires_grad(x, 0));
    std::vector<double> labels(8);
    for (int i = 0; i < 8; ++i) labels[static_cast<size_t>(i)] = (i * 3 + step) % 5;
    Var t = make_var(make_array(CH_INT32, {8}, labels));
    Var h1, h2, h3, out;
    EXPECT_CH_OK(ch_functions_relu(h1.out(), apply(l1, x)));
    EXPECT_CH_OK(ch_functions_relu(h2.out(), apply(l2, h1)));
    if (shared) {
      EXPECT_CH_OK(ch_functions_relu(h3.out(), apply(l2, h2)));
      h2 = std::move(h3);
    }
    EXPECT_CH_OK(ch_functions_softmax_cross_entropy(out.out(), apply(l3, h2), t));
    return out;
  }
  std::vector<std::vector<double>> params() const {
    std::vector<std::vector<double>> out;
    for (size_t i = 0; i < ch_function_set_parameter_count(set); ++i)
      out.push_back(param_values(set, i));
    return out;
  }
};

Opt sgd(const Net& net, double lr, bool in_backward) {
  Opt o;
  EXPECT_CH_OK(ch_optimizer_sgd_new(o.out(), lr));
  EXPECT_CH_OK(ch_optimizer_setup(o, net.set));
  EXPECT_CH_OK(ch_optimizer_set_step_in_backward(o, in_backward ? 1 : 0));
  return o;
}

void train(const Net& net, ch_optimizer* o, int steps) {
  for (int s = 0; s < steps; ++s) {
    ASSERT_CH_OK(ch_optimizer_zero_grads(o));
    Var loss = net.loss(s);
    ASSERT_CH_OK(ch_variable_backward(loss, 0));
    ASSERT_CH_OK(ch_optimizer_update(o));
  }
}

void expect_same_parameters(const Net& a, const Net& b) {
  const auto pa = a.params(), pb = b.params();
  ASSERT_EQ(pa.size(), pb.size());
  const std::vector<std::string> paths = paths_of(a.set);
  for (size_t i = 0; i < pa.size(); ++i)
    EXPECT_TRUE(AllClose(pa[i], pb[i], 1e-6, 1e-5)) << paths[i];
}

TEST_F(StepInBackward, GivesTheUsualLoopsParameters) {
  Net usual, stepped;
  Opt plain = sgd(usual, 0.1, false), fused = sgd(stepped, 0.1, true);
  EXPECT_EQ(ch_optimizer_step_in_backward(plain), 0);
  EXPECT_EQ(ch_optimizer_step_in_backward(fused), 1);
  train(usual, plain, 5);
  train(stepped, fused, 5);
  expect_same_parameters(usual, stepped);
  // The steps moved the weights (the comparison is not of untouched ones).
  Net fresh;
  EXPECT_FALSE(AllClose(usual.params()[0], fresh.params()[0], 1e-4, 0));  // l1/W
}

TEST_F(StepInBackward, BackwardStepsTheWeightsAndUpdateTheRest) {
  Net net;
  Opt o = sgd(net, 0.5, true);
  const auto before = net.params();  // l1/W, l1/b, l2/W, l2/b, l3/W, l3/b
  ASSERT_CH_OK(ch_optimizer_zero_grads(o));
  Var loss = net.loss(0);
  ASSERT_CH_OK(ch_variable_backward(loss, 0));
  const auto after_backward = net.params();
  for (size_t i : {0u, 2u, 4u}) EXPECT_FALSE(AllClose(after_backward[i], before[i], 1e-7, 0)) << i;
  for (size_t i : {1u, 3u, 5u}) EXPECT_TRUE(AllClose(after_backward[i], before[i], 0, 0)) << i;
  // The stepped weights' gradients were never written: they read as zero.
  Arr gW;
  ASSERT_CH_OK(ch_function_set_parameter(nullptr, gW.out(), nullptr, net.set, 0));
  for (double g : values(gW)) ASSERT_EQ(g, 0.0);
  ASSERT_CH_OK(ch_optimizer_update(o));
  const auto after_update = net.params();
  for (size_t i : {0u, 2u, 4u}) EXPECT_TRUE(AllClose(after_update[i], after_backward[i], 0, 0));
  for (size_t i : {1u, 3u, 5u}) EXPECT_FALSE(AllClose(after_update[i], before[i], 1e-7, 0)) << i;
}

// zero_grads may come after forward (as many loops have it): the step is
// still taken in backward. Two forward/backward passes before one update (to
// accumulate gradients) cannot be: the second backward fails, loudly.
TEST_F(StepInBackward, ZeroGradsAfterForwardAndAccumulatingPasses) {
  Net usual, stepped;
  Opt plain = sgd(usual, 0.1, false), fused = sgd(stepped, 0.1, true);
  for (int s = 0; s < 3; ++s)
    for (ch_optimizer* o : {plain.get(), fused.get()}) {
      const Net& net = o == plain.get() ? usual : stepped;
      Var loss = net.loss(s);
      ASSERT_CH_OK(ch_optimizer_zero_grads(o));
      ASSERT_CH_OK(ch_variable_backward(loss, 0));
      if (o == fused.get()) {
        Arr gW;
        ASSERT_CH_OK(ch_function_set_parameter(nullptr, gW.out(), nullptr, net.set, 0));
        for (double g : values(gW)) ASSERT_EQ(g, 0.0) << "l1/W stepped in backward";
      }
      ASSERT_CH_OK(ch_optimizer_update(o));
    }
  expect_same_parameters(usual, stepped);
  ASSERT_CH_OK(ch_optimizer_zero_grads(fused));
  Var first = stepped.loss(4);
  ASSERT_CH_OK(ch_variable_backward(first, 0));
  Var second = stepped.loss(5);
  EXPECT_CH_ERR(CH_ERR_GRAPH, ch_variable_backward(second, 0));
  EXPECT_TRUE(contains(ch_error_message(), "ch_optimizer_set_step_in_backward"))
      << ch_error_message();
  ASSERT_CH_OK(ch_optimizer_update(fused));
}

// A layer applied twice since zero_grads keeps the usual path (its gradient is
// written and update steps it); the others still step in backward.
TEST_F(StepInBackward, ALayerAppliedTwiceKeepsTheUsualPath) {
  Net usual(true), stepped(true);
  Opt plain = sgd(usual, 0.1, false), fused = sgd(stepped, 0.1, true);
  train(usual, plain, 3);
  train(stepped, fused, 3);
  expect_same_parameters(usual, stepped);
  ASSERT_CH_OK(ch_optimizer_zero_grads(fused));
  Var loss = stepped.loss(3);
  ASSERT_CH_OK(ch_variable_backward(loss, 0));
  Arr g2, g1;
  ASSERT_CH_OK(ch_function_set_parameter(nullptr, g2.out(), nullptr, stepped.set, 2));  // l2/W
  ASSERT_CH_OK(ch_function_set_parameter(nullptr, g1.out(), nullptr, stepped.set, 0));  // l1/W
  double norm2 = 0, norm1 = 0;
  for (double g : values(g2)) norm2 += g * g;
  for (double g : values(g1)) norm1 += g * g;
  EXPECT_GT(norm2, 0.0) << "the shared layer's gradient is written";
  EXPECT_EQ(norm1, 0.0) << "l1 stepped in backward";
  ASSERT_CH_OK(ch_optimizer_update(fused));
}

// What would read, change or add to gradients that were never written is
// refused until update; a second backward through a stepped layer too.
TEST_F(StepInBackward, RefusesWhatNeedsTheGradients) {
  Net net;
  Opt o = sgd(net, 0.1, true);
  ASSERT_CH_OK(ch_optimizer_zero_grads(o));
  Var loss = net.loss(0);
  ASSERT_CH_OK(ch_variable_backward(loss, 1));
  double norm = -1;
  EXPECT_CH_ERR(CH_ERR_INVALID_ARGUMENT, ch_optimizer_compute_grads_norm(&norm, o));
  EXPECT_TRUE(contains(ch_error_message(), "l1/W")) << ch_error_message();
  EXPECT_TRUE(contains(ch_error_message(), "ch_optimizer_set_step_in_backward"));
  EXPECT_CH_ERR(CH_ERR_INVALID_ARGUMENT, ch_optimizer_clip_grads(o, 1.0));
  EXPECT_CH_ERR(CH_ERR_INVALID_ARGUMENT, ch_optimizer_weight_decay(o, 1e-4));
  std::vector<Arr> zeros;
  std::vector<ch_array*> grads;
  for (size_t i = 0; i < ch_optimizer_parameter_count(o); ++i) {
    Arr g;
    ASSERT_CH_OK(ch_optimizer_parameter(nullptr, g.out(), nullptr, o, i));
    zeros.push_back(full(CH_FLOAT32, shape_of(g), 0.0));
    grads.push_back(zeros.back());
  }
  EXPECT_CH_ERR(CH_ERR_INVALID_ARGUMENT,
                ch_optimizer_accumulate_grads(o, grads.data(), grads.size()));
  const auto before = net.params();
  EXPECT_CH_ERR(CH_ERR_GRAPH, ch_variable_backward(loss, 1));
  EXPECT_TRUE(contains(ch_error_message(), "Linear")) << ch_error_message();
  EXPECT_EQ(net.params(), before) << "the refused backward changed nothing";
  ASSERT_CH_OK(ch_optimizer_update(o));
  // After update the gradients are the optimizer's again.
  ASSERT_CH_OK(ch_optimizer_compute_grads_norm(&norm, o));
  ASSERT_CH_OK(ch_optimizer_clip_grads(o, 1.0));
}

// lr set after zero_grads is the step's lr; turning the mode off gives the
// usual loop back.
TEST_F(StepInBackward, FollowsLrAndTurnsOff) {
  Net usual, stepped;
  Opt plain = sgd(usual, 0.1, false), fused = sgd(stepped, 0.1, true);
  for (int s = 0; s < 2; ++s) {
    const double lr = s == 0 ? 0.3 : 0.05;
    for (ch_optimizer* o : {plain.get(), fused.get()}) {
      const Net& net = o == plain.get() ? usual : stepped;
      ASSERT_CH_OK(ch_optimizer_zero_grads(o));
      ASSERT_CH_OK(ch_optimizer_set_hyperparam(o, "lr", lr));
      Var loss = net.loss(s);
      ASSERT_CH_OK(ch_variable_backward(loss, 0));
      ASSERT_CH_OK(ch_optimizer_update(o));
    }
  }
  expect_same_parameters(usual, stepped);
  ASSERT_CH_OK(ch_optimizer_set_step_in_backward(fused, 0));
  EXPECT_EQ(ch_optimizer_step_in_backward(fused), 0);
  ASSERT_CH_OK(ch_optimizer_zero_grads(fused));
  Var loss = stepped.loss(5);
  ASSERT_CH_OK(ch_variable_backward(loss, 0));
  double norm = 0;
  ASSERT_CH_OK(ch_optimizer_compute_grads_norm(&norm, fused));
  EXPECT_GT(norm, 0.0);
  ASSERT_CH_OK(ch_optimizer_update(fused));
}

TEST_F(StepInBackward, OnlyPlainSgdWithoutAnUpdateHook) {
  Net net;
  Opt adam;
  ASSERT_CH_OK(ch_optimizer_adam_new(adam.out(), 0.001, 0.9, 0.999, 1 - 1e-8, 1e-8));
  EXPECT_CH_ERR(CH_ERR_INVALID_ARGUMENT, ch_optimizer_set_step_in_backward(adam, 1));
  EXPECT_TRUE(contains(ch_error_message(), "Adam")) << ch_error_message();
  EXPECT_EQ(ch_optimizer_step_in_backward(adam), 0);
  EXPECT_CH_OK(ch_optimizer_set_step_in_backward(adam, 0));
  Opt o = sgd(net, 0.1, false);
  auto hook = [](void*, ch_optimizer*) -> ch_status { return CH_OK; };
  ASSERT_CH_OK(ch_optimizer_set_update_hook(o, hook, nullptr, nullptr));
  EXPECT_CH_ERR(CH_ERR_INVALID_ARGUMENT, ch_optimizer_set_step_in_backward(o, 1));
  ASSERT_CH_OK(ch_optimizer_set_update_hook(o, nullptr, nullptr, nullptr));
  ASSERT_CH_OK(ch_optimizer_set_step_in_backward(o, 1));
  EXPECT_CH_ERR(CH_ERR_INVALID_ARGUMENT, ch_optimizer_set_update_hook(o, hook, nullptr, nullptr));
  EXPECT_CH_ERR(CH_ERR_NULL_HANDLE, ch_optimizer_set_step_in_backward(nullptr, 1));
  EXPECT_EQ(ch_optimizer_step_in_backward(nullptr), 0);
}

}  // namespace
