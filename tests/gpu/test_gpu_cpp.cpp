// The C++ layer's device API (<ch/ch.hpp>): without a CUDA device the errors
// arrive as ch::Error with CH_ERR_DEVICE; with one, round trips and scopes.
#include <gtest/gtest.h>

#include <ch/ch.hpp>
#include <vector>

#include "require_gpu.h"

namespace {

TEST(GpuCpp, WithoutADeviceRequestsThrowDeviceErrors) {
  if (ch::gpu::device_count() > 0) GTEST_SKIP() << "this machine has a CUDA device";
  EXPECT_FALSE(ch::gpu::unavailable_reason().empty());
  ch::Array a(std::vector<float>{1, 2, 3}, {3});
  try {
    (void)a.to_device(ch::cuda(0));
    FAIL() << "no error";
  } catch (const ch::Error& e) {
    EXPECT_EQ(e.status(), CH_ERR_DEVICE) << e.what();
  }
  EXPECT_THROW(ch::gpu::DeviceScope scope(0), ch::Error);
  EXPECT_THROW(ch::Stream s(ch::cuda(0)), ch::Error);
  EXPECT_EQ(a.to_cpu().to_vector<float>(), (std::vector<float>{1, 2, 3}));
  EXPECT_EQ(ch::memory::limit(ch::cpu()), 0u);
}

TEST(GpuCpp, RoundTripsScopesAndStreams) {
  if (ch::gpu::device_count() == 0)
    CH_GPU_SKIP() << "no CUDA device: " << ch::gpu::unavailable_reason();
  ch::Array a(std::vector<double>{1, 2, 3, 4}, {2, 2});
  ch::Array g = a.to_device(ch::cuda(0));
  EXPECT_FALSE(g.on_cpu());
  EXPECT_EQ(g.to_vector<double>(), (std::vector<double>{1, 2, 3, 4}));
  {
    ch::gpu::DeviceScope scope(0);
    EXPECT_EQ(ch::gpu::current_device(), 0);
  }
  ch::Stream s(ch::cuda(0));
  ch::Array pinned = ch::Array::pinned({2, 2}, CH_FLOAT64);
  EXPECT_TRUE(pinned.is_pinned());
  pinned.copy_from(a);
  ch::Array d = ch::to_device_async(pinned, ch::cuda(0), s);
  s.synchronize();
  EXPECT_EQ(d.to_cpu().to_vector<double>(), (std::vector<double>{1, 2, 3, 4}));
  ch::Array r = ch::Array::empty({1000}, CH_FLOAT32, ch::cuda(0));
  ch::gpu::seed(0, 3);
  r.fill_uniform(0, 1);
  std::vector<float> first = r.to_vector<float>();
  ch::gpu::seed(0, 3);
  r.fill_uniform(0, 1);
  EXPECT_EQ(r.to_vector<float>(), first);
  EXPECT_GE(ch::memory::stats(ch::cuda(0)).bytes_in_use, 4000);
}

// A training loop written for the CPU, run on cuda:0 by moving the model and
// the data (the C++ layer's to_gpu): the same parameters as on the CPU.
std::vector<std::vector<float>> train_cpp(ch_device device) {
  namespace F = ch::F;
  std::vector<float> w(12), b = {0.1f, -0.2f, 0.3f};
  for (size_t i = 0; i < w.size(); ++i) w[i] = 0.1f * static_cast<float>(i) - 0.5f;
  ch::Function l1 = F::Linear(4, 3, 1, 0, false, ch::Array(w, {3, 4}), ch::Array(b, {3}));
  ch::FunctionSet model = ch::FunctionSet::create({{"l1", l1}});
  if (device.type != CH_DEVICE_CPU) model.to_gpu(device);
  ch::Optimizer opt = ch::Optimizer::momentum_sgd(0.1, 0.9);
  opt.setup(model);
  for (int step = 0; step < 5; ++step) {
    std::vector<float> x(8 * 4);
    for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>((i * 7 + step) % 11) / 11.0f;
    std::vector<int32_t> t(8);
    for (size_t i = 0; i < t.size(); ++i) t[i] = static_cast<int32_t>((i + step) % 3);
    ch::Variable xv(ch::Array(x, {8, 4}).to_device(device));
    ch::Variable tv(ch::Array(t, {8}).to_device(device));
    opt.zero_grads();
    ch::Variable loss = F::softmax_cross_entropy(F::relu(l1(xv)), tv);
    loss.backward();
    opt.update();
  }
  std::vector<std::vector<float>> out;
  for (const ch::NamedParameter& p : model.parameters()) out.push_back(p.param.to_vector<float>());
  return out;
}

TEST(GpuCpp, TrainingLoopMovedToTheGpuMatchesTheCpu) {
  if (ch::gpu::device_count() == 0)
    CH_GPU_SKIP() << "no CUDA device: " << ch::gpu::unavailable_reason();
  const auto on_cpu = train_cpp(ch::cpu()), on_gpu = train_cpp(ch::cuda(0));
  ASSERT_EQ(on_gpu.size(), on_cpu.size());
  for (size_t i = 0; i < on_cpu.size(); ++i)
    for (size_t k = 0; k < on_cpu[i].size(); ++k)
      EXPECT_NEAR(on_gpu[i][k], on_cpu[i][k], 1e-5) << "parameter " << i << " element " << k;
  const std::vector<float> b0 = {0.1f, -0.2f, 0.3f};
  EXPECT_NE(on_cpu[1], b0) << "the loop did not train (l1/b unchanged)";
}

}  // namespace
