// The seed's MulAdd as a user function whose forward and backward are user
// kernels (the "Write an Elementwise Kernel Function" example): forward
// values against a loop, and check_backward (numerical gradients) in float64
// and float32 on the CPU.
#include <vector>

#include "kernel_test_util.h"

using namespace capi_test;
using namespace kernel_test;

namespace {

struct MulAddKernels {
  ch_elementwise_kernel* fwd = nullptr;
  ch_elementwise_kernel* bwd = nullptr;
};

void destroy_kernels(void* p) {
  auto* k = static_cast<MulAddKernels*>(p);
  ch_elementwise_kernel_release(k->fwd);
  ch_elementwise_kernel_release(k->bwd);
  delete k;
}

ch_status muladd_forward(void* user_data, ch_context* ctx, ch_array* const* inputs, size_t n) {
  auto* k = static_cast<MulAddKernels*>(user_data);
  ch_array* w = nullptr;
  ch_status st = ch_elementwise_kernel_call(k->fwd, inputs, n, &w, 1);
  if (st != CH_OK) return st;
  st = ch_context_add_output(ctx, w);
  ch_array_release(w);
  return st;
}

ch_status muladd_backward(void* user_data, ch_context* ctx, ch_array* const* inputs, size_t,
                          ch_array* const*, size_t, ch_array* const* grad_outputs, size_t) {
  auto* k = static_cast<MulAddKernels*>(user_data);
  ch_array* args[3] = {inputs[0], inputs[1], grad_outputs[0]};
  ch_array* g[2] = {nullptr, nullptr};
  ch_status st = ch_elementwise_kernel_call(k->bwd, args, 3, g, 2);
  if (st == CH_OK) st = ch_context_set_grad_input(ctx, 0, g[0]);
  if (st == CH_OK) st = ch_context_set_grad_input(ctx, 1, g[1]);
  if (st == CH_OK) st = ch_context_set_grad_input(ctx, 2, grad_outputs[0]);  // gz = gw
  ch_array_release(g[0]);
  ch_array_release(g[1]);
  return st;
}

class KernelFunction : public CapiTest {
 protected:
  void SetUp() override {
    CapiTest::SetUp();
    if (!ch_kernel_cpu_supported())
      GTEST_SKIP() << "this build has no CPU kernel compiler (libtcc)";
    auto* k = new MulAddKernels;
    ASSERT_CH_OK(
        ch_elementwise_kernel_new(&k->fwd, "T x, T y, T z", "T w", "w = x * y + z", "muladd_fwd"));
    ASSERT_CH_OK(ch_elementwise_kernel_new(&k->bwd, "T x, T y, T gw", "T gx, T gy",
                                           "gx = y * gw;\ngy = x * gw;", "muladd_bwd"));
    ch_function_def def{};
    def.version = CH_FUNCTION_DEF_VERSION;
    def.name = "MulAdd";
    def.forward = muladd_forward;
    def.backward = muladd_backward;
    def.user_data = k;
    def.destroy = destroy_kernels;
    ASSERT_CH_OK(ch_function_new(fn_.out(), &def));
  }
  void TearDown() override {
    fn_.reset();
    CapiTest::TearDown();
  }
  Fn fn_;
};

TEST_F(KernelFunction, ForwardMatchesLoop) {
  auto xv = wave(6, 0.1), yv = wave(6, 0.8), zv = wave(6, 1.9);
  Var x = var_f64({2, 3}, xv), y = var_f64({2, 3}, yv), z = var_f64({2, 3}, zv);
  ch_variable* in[3] = {x, y, z};
  Var w;
  size_t n_out = 0;
  ASSERT_CH_OK(ch_function_apply(fn_, in, 3, w.out(), 1, &n_out));
  ASSERT_EQ(n_out, 1u);
  std::vector<double> ref(6);  // reference: float64 loop
  for (size_t j = 0; j < 6; ++j) ref[j] = xv[j] * yv[j] + zv[j];
  EXPECT_TRUE(AllClose(data_of(w), ref, 1e-15, 1e-15));
  EXPECT_EQ(creator_name(w), "MulAdd");
}

TEST_F(KernelFunction, CheckBackwardFloat64) {
  Arr x = f64({3, 4}, wave(12, 0.3)), y = f64({3, 4}, wave(12, 1.2)),
      z = f64({3, 4}, wave(12, 2.2));
  Arr gw = f64({3, 4}, wave(12, 0.7));
  ch_array* in[3] = {x, y, z};
  ch_array* g[1] = {gw};
  EXPECT_CH_OK(ch_check_backward(fn_, in, 3, g, 1, 1e-6, 1e-7, 1e-6));
}

TEST_F(KernelFunction, CheckBackwardFloat32) {
  Arr x = f32({5}, wave(5, 0.3)), y = f32({5}, wave(5, 1.2)), z = f32({5}, wave(5, 2.2));
  ch_array* in[3] = {x, y, z};
  EXPECT_CH_OK(ch_check_backward(fn_, in, 3, nullptr, 0, 1e-2, 1e-3, 1e-3));
}

}  // namespace
