// The use_cudnn switch (ch_config_set_use_cudnn) over the functions cuDNN
// may run (cuda/cudnn/): with it on and with it off, every one agrees with
// the CPU, forward and backward. In a build without cuDNN (the emulated
// devices: there is no emulated cuDNN) chainerc's own CUDA kernels run both
// times, so the two runs must also be bit for bit equal there. The cuDNN
// implementations themselves run only on a real GPU with libcudnn.so.9.
#include <ch/ch.h>

#include <cstdio>
#include <cstring>

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

}  // namespace
}  // namespace gputest
