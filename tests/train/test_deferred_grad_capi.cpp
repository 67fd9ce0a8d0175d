// Deferred weight gradients through the C API: after backward a large
// Linear's gW is the product gy^T x, not yet written (src/ops/connection/
// linear.cpp). Whatever the caller then writes into x (ch_array_write,
// ch_array_fill, ch_array_copy_from, a pointer from ch_array_data) must not
// change the gradient, the SGD update or what ch_array_get reads. The
// reference net's gradients were handed out (ch_array_data) before training,
// so its backward writes them as it always did.
#include <cmath>

#include "train_test_util.h"

using namespace train_test;

namespace {

constexpr int64_t kIn = 784, kOut = 512, kBatch = 8;  // W: 1.6 MB, deferred

std::vector<double> pattern(size_t n, unsigned seed) {
  std::vector<double> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = std::fmod((i + 1) * 0.6180339887 * (seed + 1), 1.0) - 0.5;
  return v;
}

struct Net {
  Fn layer;
  FnSet set;
  Opt opt;
  explicit Net(bool reference) {
    Arr W = make_array(CH_FLOAT32, {kOut, kIn}, pattern(static_cast<size_t>(kIn * kOut), 1));
    Arr b = make_array(CH_FLOAT32, {kOut}, pattern(static_cast<size_t>(kOut), 2));
    EXPECT_CH_OK(ch_functions_linear_new(layer.out(), kIn, kOut, CH_FLOAT32, 1, 0, 0, W, b));
    EXPECT_CH_OK(ch_function_set_new(set.out()));
    EXPECT_CH_OK(ch_function_set_add_function(set, "l", layer));
    EXPECT_CH_OK(ch_optimizer_sgd_new(opt.out(), 0.5));
    EXPECT_CH_OK(ch_optimizer_setup(opt, set));
    if (reference) {
      for (size_t i = 0; i < 2; ++i) EXPECT_NE(ch_array_data(grad(i)), nullptr);
    }
  }
  Arr grad(size_t i) const {
    Arr g;
    EXPECT_CH_OK(ch_function_set_parameter(nullptr, g.out(), nullptr, set, i));
    return g;
  }
  // zero_grads, forward and backward on x (kept by the caller).
  void forward_backward(ch_array* x) const {
    ASSERT_CH_OK(ch_optimizer_zero_grads(opt));
    Var vx = make_var(x);
    ASSERT_CH_OK(ch_variable_set_requires_grad(vx, 0));
    std::vector<double> labels(kBatch);
    for (int64_t i = 0; i < kBatch; ++i) labels[static_cast<size_t>(i)] = (i * 37) % kOut;
    Var t = make_var(make_array(CH_INT32, {kBatch}, labels));
    Var y, loss;
    ch_variable* in = vx;
    ASSERT_CH_OK(ch_function_apply(layer, &in, 1, y.out(), 1, nullptr));
    ASSERT_CH_OK(ch_functions_softmax_cross_entropy(loss.out(), y, t));
    ASSERT_CH_OK(ch_variable_backward(loss, 0));
  }
};

class DeferredGradCapi : public CapiTest {
 protected:
  void SetUp() override {
    CapiTest::SetUp();
    ASSERT_CH_OK(ch_config_set_gemm("openblas"));  // both nets round alike
  }
  void TearDown() override {
    EXPECT_CH_OK(ch_config_set_gemm("auto"));
    CapiTest::TearDown();
  }
};

TEST_F(DeferredGradCapi, WritesIntoTheInputAfterBackwardChangeNothing) {
  const std::vector<std::pair<const char*, void (*)(ch_array*)>> writes = {
      {"ch_array_write",
       [](ch_array* x) {
         const std::vector<float> zeros(static_cast<size_t>(kBatch * kIn), 0.0f);
         EXPECT_CH_OK(ch_array_write(x, zeros.data(), zeros.size() * sizeof(float)));
       }},
      {"ch_array_fill", [](ch_array* x) { EXPECT_CH_OK(ch_array_fill(x, 3.0)); }},
      {"ch_array_copy_from",
       [](ch_array* x) {
         Arr other = full(CH_FLOAT32, {kBatch, kIn}, -1.0);
         EXPECT_CH_OK(ch_array_copy_from(x, other));
       }},
      {"ch_array_data",
       [](ch_array* x) {
         auto* p = static_cast<float*>(ch_array_data(x));
         ASSERT_NE(p, nullptr);
         for (int64_t i = 0; i < kBatch * kIn; ++i) p[i] = 7.0f;
       }},
  };
  const std::vector<double> xs = pattern(static_cast<size_t>(kBatch * kIn), 3);
  for (const auto& [how, write] : writes) {
    Net lazy(false), ref(true);
    Arr x_lazy = f32({kBatch, kIn}, xs), x_ref = f32({kBatch, kIn}, xs);
    lazy.forward_backward(x_lazy);
    ref.forward_backward(x_ref);
    write(x_lazy);
    write(x_ref);
    // The gradient as backward computed it, from the x it saw.
    const std::vector<double> g = values(lazy.grad(0)), want = values(ref.grad(0));
    EXPECT_TRUE(AllClose(g, want, 1e-6, 1e-5)) << how;
    double norm = 0;
    for (double v : want) norm += v * v;
    EXPECT_GT(norm, 1e-6) << "the reference gradient is not all zeros";
    ASSERT_CH_OK(ch_optimizer_update(lazy.opt));
    ASSERT_CH_OK(ch_optimizer_update(ref.opt));
    EXPECT_TRUE(AllClose(param_values(lazy.set, 0), param_values(ref.set, 0), 1e-6, 1e-5)) << how;
  }
}

// The same, with the write between backward and the update, before anything
// reads the gradient: SGD adds -lr gy^T x into W from the x backward saw.
TEST_F(DeferredGradCapi, AWriteBeforeTheUpdateLeavesTheStepAlone) {
  const std::vector<double> xs = pattern(static_cast<size_t>(kBatch * kIn), 5);
  Net lazy(false), ref(true);
  for (int step = 0; step < 3; ++step) {
    Arr x_lazy = f32({kBatch, kIn}, xs), x_ref = f32({kBatch, kIn}, xs);
    lazy.forward_backward(x_lazy);
    ref.forward_backward(x_ref);
    ASSERT_CH_OK(ch_array_fill(x_lazy, 100.0));
    ASSERT_CH_OK(ch_array_fill(x_ref, 100.0));
    ASSERT_CH_OK(ch_optimizer_update(lazy.opt));
    ASSERT_CH_OK(ch_optimizer_update(ref.opt));
    EXPECT_TRUE(AllClose(param_values(lazy.set, 0), param_values(ref.set, 0), 1e-6, 1e-5))
        << "step " << step;
  }
}

}  // namespace
