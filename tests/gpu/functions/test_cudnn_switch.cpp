// The use_cudnn switch (ch_config_set_use_cudnn) over the functions cuDNN
// may run (cuda/cudnn/): with it on and with it off, every one agrees with
// the CPU, forward and backward. In a build without cuDNN (the emulated
// devices: there is no emulated cuDNN) chainerc's own CUDA kernels run both
// times, so the two runs must also be bit for bit equal there. The cuDNN
// implementations themselves run only on a real GPU with libcudnn.so.9.
#include <ch/ch.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "agreement.h"
#include "core/config.h"
#include "kernels/activation.h"
#include "kernels/connection.h"
#include "kernels/normalization.h"
#include "kernels/pooling.h"

namespace gputest {
namespace {

using namespace chainerc;

struct SwitchCase {
  Case c;
  std::vector<const kernels::KernelBase*> kernels;  // what the case needs on CUDA
};

// The outputs and the inputs' and parameters' gradients on cuda:0 (copied
// to the CPU) for the upstream gradient 1 everywhere.
Arrays run_on_gpu(const Case& c) {
  std::vector<VarPtr> xs;
  for (const Array& x : c.inputs)
    xs.push_back(std::make_shared<VariableImpl>(x.to_device(gpu()), true));
  FuncPtr fn = c.function ? with_parameters_on(c.function, gpu()) : nullptr;
  std::vector<VarPtr> ys = c.build(xs, fn);
  Arrays r;
  for (const VarPtr& y : ys) {
    r.push_back(y->data.to_device(cpu()));
    y->grad = Array::full(y->data.dtype(), y->data.shape(), 1.0, gpu());
    backward(y, false);
  }
  for (const VarPtr& x : xs)
    if (x->grad.defined()) r.push_back(x->grad.to_device(cpu()));
  if (fn && fn->parameters)
    for (const Parameter& p : *fn->parameters) r.push_back(p.grad.to_device(cpu()));
  return r;
}

Build unary(VarPtr (*f)(const VarPtr&)) {
  return [f](const std::vector<VarPtr>& x, const FuncPtr&) { return std::vector<VarPtr>{f(x[0])}; };
}

std::vector<SwitchCase> cases() {
  using kernels::KernelBase;
  std::vector<SwitchCase> r;
  for (DType dt : {DType::Float32, DType::Float64}) {
    const std::string t = std::string(" ") + dtype_name(dt);
    const Array v = away_from_zero(dt, {1025}, 0.01, 3, 11);
    r.push_back({{"relu" + t, {v}, unary(ops::relu)}, {&kernels::relu, &kernels::relu_grad}});
    r.push_back(
        {{"sigmoid" + t, {v}, unary(ops::sigmoid)}, {&kernels::sigmoid, &kernels::sigmoid_grad}});
    r.push_back({{"tanh" + t, {v}, unary(ops::tanh)}, {&kernels::tanh, &kernels::tanh_grad}});
    for (const Shape& s : {Shape{3, 7}, Shape{2, 5, 3, 2}})
      r.push_back(
          {{"softmax " + s.to_string() + t, {uniform(dt, s, -2, 2, 12)}, unary(ops::softmax)},
           {&kernels::softmax, &kernels::softmax_grad}});
    const Array img = uniform(dt, {2, 3, 7, 6}, -1, 1, 13);
    // Bias, stride 2, padding 1; and no bias, stride 1, no padding.
    for (bool nobias : {false, true}) {
      FuncPtr conv =
          ops::convolution_2d_new(3, 4, 3, 2, nobias ? 1 : 2, nobias ? 1 : 2, nobias ? 0 : 1,
                                  nobias ? 0 : 1, dt, 1.0, 0.1, nobias, nullptr, nullptr);
      r.push_back({{std::string("convolution_2d") + (nobias ? " nobias" : "") + t,
                    {img},
                    [](const std::vector<VarPtr>& x, const FuncPtr& f) {
                      return std::vector<VarPtr>{apply1(f, {x[0]})};
                    },
                    conv},
                   {&kernels::conv2d_forward, &kernels::conv2d_backward}});
    }
    // Average pooling with padding (cuDNN's case); max pooling with cover_all
    // growing the output (the own kernels either way) and without (cuDNN's
    // case).
    r.push_back({{"average_pooling_2d" + t,
                  {img},
                  [](const std::vector<VarPtr>& x, const FuncPtr&) {
                    return std::vector<VarPtr>{ops::average_pooling_2d(x[0], 3, 2, 2, 1, 1, 1)};
                  }},
                 {&kernels::average_pool_2d_forward, &kernels::average_pool_2d_backward}});
    r.push_back({{"max_pooling_2d" + t,
                  {img},
                  [](const std::vector<VarPtr>& x, const FuncPtr&) {
                    return std::vector<VarPtr>{ops::max_pooling_2d(x[0], 3, 3, 2, 2, 1, 1, true)};
                  }},
                 {&kernels::max_pool_2d_forward, &kernels::max_pool_2d_backward}});
    r.push_back({{"max_pooling_2d exact" + t,
                  {img},
                  [](const std::vector<VarPtr>& x, const FuncPtr&) {
                    return std::vector<VarPtr>{ops::max_pooling_2d(x[0], 3, 2, 2, 2, 1, 0, true)};
                  }},
                 {&kernels::max_pool_2d_forward, &kernels::max_pool_2d_backward}});
    // BatchNormalization with batch statistics (cuDNN's training forward and
    // backward) and with the running averages (its inference forward, the
    // own backward), on NCHW (spatial) and 2-d (per-activation) input.
    for (bool train : {true, false})
      for (const Shape& s : {Shape{2, 3, 7, 6}, Shape{5, 3}}) {
        FuncPtr bn = ops::batch_normalization_new(Shape{3}, 0.9, 2e-5, dt);
        (*bn->parameters)[0].param = uniform(dt, Shape{3}, 0.5, 1.5, 14);
        (*bn->parameters)[1].param = uniform(dt, Shape{3}, -1, 1, 15);
        ops::batch_normalization_state(bn)->avg_var = uniform(dt, Shape{3}, 0.5, 2, 16);
        r.push_back({{std::string("batch_normalization ") + (train ? "train " : "test ") +
                          s.to_string() + t,
                      {uniform(dt, s, -2, 3, 17)},
                      [train](const std::vector<VarPtr>& x, const FuncPtr& f) {
                        return std::vector<VarPtr>{
                            apply1(ops::batch_normalization_node(f, train, false), {x[0]})};
                      },
                      bn},
                     {&kernels::batch_norm_forward, &kernels::batch_norm_backward}});
      }
    // LRN with an odd window (cuDNN's case) and an even one (the own kernels).
    for (int64_t n : {5, 4})
      r.push_back({{"local_response_normalization n " + std::to_string(n) + t,
                    {img},
                    [n](const std::vector<VarPtr>& x, const FuncPtr&) {
                      return std::vector<VarPtr>{
                          ops::local_response_normalization(x[0], n, 2.0, 1e-2, 0.75)};
                    }},
                   {&kernels::lrn_forward, &kernels::lrn_backward}});
  }
  return r;
}

TEST(CudnnSwitch, RoundTripsAndStartsOn) {
  EXPECT_EQ(ch_config_use_cudnn(), 1) << "use_cudnn starts on (the seed's default)";
  ch_config_set_use_cudnn(0);
  EXPECT_EQ(ch_config_use_cudnn(), 0);
  EXPECT_FALSE(config::use_cudnn());
  ch_config_set_use_cudnn(-3);  // any non-zero value is on
  EXPECT_EQ(ch_config_use_cudnn(), 1);
  EXPECT_TRUE(config::use_cudnn());
}

TEST_F(GpuFunctions, UseCudnnOnAndOffAgreeWithTheCpu) {
  std::string missing;
  int ran = 0;
  for (const SwitchCase& sc : cases()) {
    bool have = true;
    for (const kernels::KernelBase* k : sc.kernels)
      have = have && k->implemented_for(CH_DEVICE_CUDA);
    if (!have) {  // its own CUDA kernels are not in this build yet
      missing += " " + sc.c.name + ";";
      continue;
    }
    SCOPED_TRACE(sc.c.name);
    config::set_use_cudnn(true);
    expect_agreement(sc.c);
    const Arrays on = run_on_gpu(sc.c);
    config::set_use_cudnn(false);
    expect_agreement(sc.c);
    const Arrays off = run_on_gpu(sc.c);
    config::set_use_cudnn(true);
    ASSERT_EQ(on.size(), off.size());
#if !defined(CH_HAVE_CUDNN)
    // No cuDNN in this build: the own kernels ran both times.
    for (size_t i = 0; i < on.size(); ++i) {
      ASSERT_EQ(on[i].nbytes(), off[i].nbytes());
      EXPECT_EQ(std::memcmp(on[i].raw(), off[i].raw(), on[i].nbytes()), 0)
          << "result " << i << " differs between use_cudnn on and off";
    }
#endif
    ++ran;
  }
  EXPECT_GT(ran, 0);
  if (!missing.empty())
    std::printf("[   NOTE   ] no CUDA kernel in this build for:%s\n", missing.c_str());
}

// ch_config_cudnn says whether cuDNN is in use, and why not; the per-kernel
// counts of ch_config_cudnn_calls show which functions reached cuDNN. On a
// GPU with libcudnn.so.9 (bench/gpu/device_check.sh runs this with
// CH_REQUIRE_CUDNN=1) relu, softmax and the convolution must have called it;
// elsewhere nothing may have, and the reason must say why.
TEST_F(GpuFunctions, CudnnStateIsReportedAndItsCallsCounted) {
  const char* reason = nullptr;
  int32_t version = -1;
  config::set_use_cudnn(true);
  const int32_t state = ch_config_cudnn(&reason, &version);
  ASSERT_NE(reason, nullptr);
  const std::string why = reason;
  ch_config_reset_cudnn_calls();
  const Array v = away_from_zero(DType::Float32, {64}, 0.01, 3, 11);
  auto x = std::make_shared<VariableImpl>(v.to_device(gpu()), true);
  VarPtr y = ops::relu(x);
  y->grad = Array::full(DType::Float32, y->data.shape(), 1.0, gpu());
  backward(y, false);
  VarPtr s = ops::softmax(std::make_shared<VariableImpl>(
      uniform(DType::Float32, {3, 7}, -2, 2, 12).to_device(gpu()), false));
  FuncPtr conv = ops::convolution_2d_new(3, 4, 3, 1, 1, 1, 1, 1, DType::Float32, 1.0, 0.1, false,
                                         nullptr, nullptr);
  conv = with_parameters_on(conv, gpu());
  VarPtr c =
      apply1(conv, {std::make_shared<VariableImpl>(
                       uniform(DType::Float32, {2, 3, 7, 6}, -1, 1, 13).to_device(gpu()), false)});
  if (state == CH_CUDNN_IN_USE) {
    EXPECT_EQ(why, "");
    EXPECT_GE(version, 90000);
    EXPECT_EQ(ch_config_cudnn_calls("relu"), 1);
    EXPECT_EQ(ch_config_cudnn_calls("relu_grad"), 1);
    EXPECT_EQ(ch_config_cudnn_calls("softmax_forward"), 1);
    EXPECT_EQ(ch_config_cudnn_calls("conv2d_forward"), 1);
    EXPECT_GE(ch_config_cudnn_calls(nullptr), 4);
  } else {
    EXPECT_NE(why, "") << "state " << state << " without a reason";
    EXPECT_EQ(ch_config_cudnn_calls(nullptr), 0);
  }
  const char* hidden = std::getenv("CH_DISABLE_CUDNN");
  if (hidden && std::strcmp(hidden, "1") == 0) {
    // device_check.sh's second stage: hidden, so the own kernels run.
    EXPECT_EQ(state, CH_CUDNN_SWITCHED_OFF) << why;
    EXPECT_NE(why.find("CH_DISABLE_CUDNN=1"), std::string::npos) << why;
  } else {
#if !defined(CH_HAVE_CUDNN)
    EXPECT_EQ(state, CH_CUDNN_NOT_BUILT) << why;
    EXPECT_NE(why.find("no cuDNN"), std::string::npos) << why;
    EXPECT_EQ(version, 0);
#endif
  }
  EXPECT_EQ(ch_config_cudnn_calls("no such kernel"), 0);
  ch_config_reset_cudnn_calls();
  EXPECT_EQ(ch_config_cudnn_calls(nullptr), 0);

  // Switched off: said so, and nothing reaches cuDNN.
  ch_config_set_use_cudnn(0);
  EXPECT_EQ(ch_config_cudnn(&reason, nullptr), CH_CUDNN_SWITCHED_OFF);
  EXPECT_NE(std::string(reason).find("ch_config_set_use_cudnn(0)"), std::string::npos) << reason;
  VarPtr y2 = ops::relu(x);
  EXPECT_EQ(ch_config_cudnn_calls(nullptr), 0);
  ch_config_set_use_cudnn(1);
  EXPECT_EQ(ch_config_cudnn(nullptr, nullptr), state) << "the state does not change by asking";
}

// CH_REQUIRE_CUDNN=1 (the test gpu_require_cudnn; device_check.sh's first
// stage): cuDNN's absence is an error of every function cuDNN would run,
// naming why, unless it is switched off on purpose.
TEST_F(GpuFunctions, RequireCudnnMakesItsAbsenceAnError) {
  const char* env = std::getenv("CH_REQUIRE_CUDNN");
  if (!env || std::strcmp(env, "1") != 0 || std::getenv("CH_DISABLE_CUDNN"))
    GTEST_SKIP() << "CH_REQUIRE_CUDNN=1 is not set (the test gpu_require_cudnn sets it)";
  config::set_use_cudnn(true);
  const char* reason = nullptr;
  const int32_t state = ch_config_cudnn(&reason, nullptr);
  const std::string why = reason;
  // The copy to the device is already refused where this build has no cuDNN.
  auto relu_on_gpu = [] {
    auto x = std::make_shared<VariableImpl>(
        away_from_zero(DType::Float32, {64}, 0.01, 3, 11).to_device(gpu()), false);
    ops::relu(x);
  };
  if (state == CH_CUDNN_IN_USE) {
    EXPECT_NO_THROW(relu_on_gpu());
  } else {
    try {
      relu_on_gpu();
      ADD_FAILURE() << "relu ran on the GPU without cuDNN under CH_REQUIRE_CUDNN=1";
    } catch (const Error& e) {
      EXPECT_EQ(e.status(), CH_ERR_DEVICE);
      EXPECT_NE(std::string(e.what()).find("CH_REQUIRE_CUDNN=1"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
    }
  }
  // Switched off on purpose: the own kernels run, no error.
  config::set_use_cudnn(false);
  EXPECT_NO_THROW(relu_on_gpu());
  config::set_use_cudnn(true);
}

}  // namespace
}  // namespace gputest
