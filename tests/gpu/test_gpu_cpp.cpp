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

}  // namespace
