// Devices through the C API on any machine: with no CUDA device (no GPU, no
// driver, or a build without the backend) every CUDA request is a clear
// CH_ERR_DEVICE error and the CPU works as before; with devices, requests for
// one that does not exist fail the same way. The GPU behaviour itself is
// tested in tests/gpu/.
#include <cmath>
#include <string>
#include <vector>

#include "capi_test_util.h"

using namespace capi_test;

namespace {

class Devices : public CapiTest {};

std::string last_message() { return ch_error_message(); }

TEST_F(Devices, CountIsNeverNegativeAndZeroSaysWhy) {
  int32_t n = ch_cuda_device_count();
  EXPECT_GE(n, 0);
  std::string why = ch_cuda_unavailable_reason();
  if (n == 0)
    EXPECT_FALSE(why.empty());
  else
    EXPECT_TRUE(why.empty()) << why;
  ch_device d = ch_device_cuda(2);
  EXPECT_EQ(d.type, CH_DEVICE_CUDA);
  EXPECT_EQ(d.index, 2);
}

TEST_F(Devices, AMissingCudaDeviceIsADeviceErrorNeverACpuFallback) {
  const int32_t missing = ch_cuda_device_count();  // one past the last
  const std::string name = "cuda:" + std::to_string(missing);
  const int64_t shape[] = {2, 2};
  const float data[] = {1, 2, 3, 4};
  ch_array* out = reinterpret_cast<ch_array*>(&out);  // must be set to NULL
  EXPECT_CH_ERR(CH_ERR_DEVICE,
                ch_array_new(&out, CH_FLOAT32, shape, 2, data, ch_device_cuda(missing)));
  EXPECT_EQ(out, nullptr);
  EXPECT_TRUE(contains(last_message(), name)) << last_message();
  EXPECT_TRUE(contains(last_message(), ch_cuda_device_count() == 0 ? "no CUDA" : "no CUDA device"))
      << last_message();
  EXPECT_CH_ERR(CH_ERR_DEVICE,
                ch_array_new_empty(&out, CH_FLOAT32, shape, 2, ch_device_cuda(missing)));
  EXPECT_CH_ERR(CH_ERR_DEVICE,
                ch_array_new_full(&out, CH_FLOAT64, shape, 2, 1.0, ch_device_cuda(missing)));
  EXPECT_CH_ERR(CH_ERR_DEVICE, ch_array_new_empty(&out, CH_FLOAT32, shape, 2, ch_device_cuda(-1)));
  float host[4] = {0, 0, 0, 0};
  EXPECT_CH_ERR(CH_ERR_DEVICE, ch_array_wrap(&out, CH_FLOAT32, shape, 2, host,
                                             ch_device_cuda(missing), nullptr, nullptr));

  Arr a = f32({2, 2}, {1, 2, 3, 4});
  EXPECT_CH_ERR(CH_ERR_DEVICE, ch_array_to_device(&out, a.get(), ch_device_cuda(missing)));
  EXPECT_EQ(out, nullptr);
  ch_memory_stats stats;
  EXPECT_CH_ERR(CH_ERR_DEVICE, ch_memory_stats_get(&stats, ch_device_cuda(missing)));
  EXPECT_CH_ERR(CH_ERR_DEVICE, ch_memory_empty_cache(ch_device_cuda(missing)));
  EXPECT_CH_ERR(CH_ERR_DEVICE, ch_memory_set_limit(ch_device_cuda(missing), 1 << 20));
  size_t limit = 7;
  EXPECT_CH_ERR(CH_ERR_DEVICE, ch_memory_limit(&limit, ch_device_cuda(missing)));
  EXPECT_CH_ERR(CH_ERR_DEVICE, ch_cuda_device_push(missing));
  EXPECT_CH_ERR(CH_ERR_DEVICE, ch_cuda_synchronize(missing));
  EXPECT_CH_ERR(CH_ERR_DEVICE, ch_cuda_seed(missing, 1));
  ch_stream* s = reinterpret_cast<ch_stream*>(&s);
  EXPECT_CH_ERR(CH_ERR_DEVICE, ch_stream_new(&s, ch_device_cuda(missing)));
  EXPECT_EQ(s, nullptr);
  // The CPU still works afterwards.
  EXPECT_TRUE(AllClose(values(a.get()), {1, 2, 3, 4}));
}

TEST_F(Devices, WithoutAnyDeviceEveryCudaEntryPointFails) {
  if (ch_cuda_device_count() > 0) GTEST_SKIP() << "this machine has a CUDA device";
  int32_t cur = 5;
  EXPECT_CH_ERR(CH_ERR_DEVICE, ch_cuda_current_device(&cur));
  EXPECT_CH_ERR(CH_ERR_DEVICE, ch_cuda_device_push(0));
  EXPECT_CH_ERR(CH_ERR_DEVICE, ch_cuda_seed(-1, 3));
  ch_array* out = nullptr;
  const int64_t shape[] = {3};
  EXPECT_CH_ERR(CH_ERR_DEVICE, ch_array_new_pinned(&out, CH_FLOAT32, shape, 1));
  EXPECT_EQ(out, nullptr);
  EXPECT_TRUE(contains(last_message(), "no CUDA")) << last_message();
}

TEST_F(Devices, StreamsAreOnCudaDevicesOnly) {
  ch_stream* s = nullptr;
  EXPECT_CH_ERR(CH_ERR_DEVICE, ch_stream_new(&s, ch_device_cpu()));
  EXPECT_TRUE(contains(last_message(), "cpu")) << last_message();
  EXPECT_CH_ERR(CH_ERR_INVALID_ARGUMENT, ch_stream_new(nullptr, ch_device_cuda(0)));
  EXPECT_CH_OK(ch_stream_release(nullptr));
  EXPECT_CH_ERR(CH_ERR_NULL_HANDLE, ch_stream_synchronize(nullptr));
  EXPECT_EQ(ch_stream_native(nullptr), nullptr);
  EXPECT_EQ(ch_stream_device(nullptr).type, 0);
  EXPECT_EQ(ch_stream_retain(nullptr), nullptr);
  Arr a = f32({2}, {1, 2});
  ch_array* out = nullptr;
  EXPECT_CH_ERR(CH_ERR_NULL_HANDLE,
                ch_array_to_device_async(&out, a.get(), ch_device_cpu(), nullptr));
  EXPECT_CH_ERR(CH_ERR_NULL_HANDLE, ch_array_copy_from_async(a.get(), a.get(), nullptr));
}

TEST_F(Devices, DevicePopWithoutPushIsAnError) {
  EXPECT_CH_ERR(CH_ERR_INVALID_ARGUMENT, ch_cuda_device_pop());
  EXPECT_TRUE(contains(last_message(), "no device was pushed")) << last_message();
}

TEST_F(Devices, CpuToCpuCopiesAndCopyFrom) {
  Arr a = f64({2, 3}, {1, 2, 3, 4, 5, 6});
  ch_array* out = nullptr;
  ASSERT_CH_OK(ch_array_to_device(&out, a.get(), ch_device_cpu()));
  Arr b(out);
  EXPECT_NE(ch_array_data(b.get()), ch_array_data(a.get()));
  EXPECT_TRUE(AllClose(values(b.get()), {1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(ch_array_device(b.get()).type, CH_DEVICE_CPU);
  EXPECT_EQ(ch_array_is_pinned(b.get()), 0);

  Arr c = full(CH_FLOAT64, {6}, 0.0);  // same size, other shape: fine
  ASSERT_CH_OK(ch_array_copy_from(c.get(), a.get()));
  EXPECT_TRUE(AllClose(values(c.get()), {1, 2, 3, 4, 5, 6}));
  Arr d = full(CH_FLOAT32, {6}, 0.0);
  EXPECT_CH_ERR(CH_ERR_SHAPE, ch_array_copy_from(d.get(), a.get()));
  EXPECT_TRUE(contains(last_message(), "float64")) << last_message();
  Arr e = full(CH_FLOAT64, {5}, 0.0);
  EXPECT_CH_ERR(CH_ERR_SHAPE, ch_array_copy_from(e.get(), a.get()));
  EXPECT_CH_ERR(CH_ERR_NULL_HANDLE, ch_array_copy_from(nullptr, a.get()));
  EXPECT_CH_ERR(CH_ERR_DEVICE, ch_array_to_device(&out, a.get(), ch_device{7, 0}));
  EXPECT_CH_ERR(CH_ERR_DEVICE, ch_array_to_device(&out, a.get(), ch_device{CH_DEVICE_CPU, 1}));
}

TEST_F(Devices, RandomFillsOnTheCpuAreSeededAndChecked) {
  Arr a = full(CH_FLOAT32, {1000}, 0.0);
  Arr b = full(CH_FLOAT64, {1000}, 0.0);
  ch_config_seed(42);
  ASSERT_CH_OK(ch_array_fill_uniform(a.get(), -2.0, 3.0));
  ASSERT_CH_OK(ch_array_fill_normal(b.get(), 10.0, 0.5));
  std::vector<double> va = values(a.get()), vb = values(b.get());
  double mean = 0;
  for (double v : va) {
    EXPECT_GE(v, -2.0);
    EXPECT_LT(v, 3.0);
  }
  for (double v : vb) mean += v / 1000;
  EXPECT_NEAR(mean, 10.0, 0.1);
  ch_config_seed(42);
  ASSERT_CH_OK(ch_array_fill_uniform(a.get(), -2.0, 3.0));
  EXPECT_EQ(values(a.get()), va);  // reproducible from the seed

  EXPECT_CH_ERR(CH_ERR_INVALID_ARGUMENT, ch_array_fill_uniform(a.get(), 1.0, 1.0));
  EXPECT_TRUE(contains(last_message(), "low = 1")) << last_message();
  EXPECT_CH_ERR(CH_ERR_INVALID_ARGUMENT, ch_array_fill_uniform(a.get(), 0.0, INFINITY));
  EXPECT_CH_ERR(CH_ERR_INVALID_ARGUMENT, ch_array_fill_normal(a.get(), 0.0, 0.0));
  EXPECT_CH_ERR(CH_ERR_INVALID_ARGUMENT, ch_array_fill_normal(a.get(), NAN, 1.0));
  Arr i = full(CH_INT32, {3}, 0.0);
  EXPECT_CH_ERR(CH_ERR_DTYPE, ch_array_fill_uniform(i.get(), 0.0, 1.0));
  EXPECT_CH_ERR(CH_ERR_NULL_HANDLE, ch_array_fill_normal(nullptr, 0.0, 1.0));
}

TEST_F(Devices, CpuMemoryHasNoLimitAndTheHookCanBeCleared) {
  EXPECT_CH_ERR(CH_ERR_UNSUPPORTED, ch_memory_set_limit(ch_device_cpu(), 1 << 20));
  size_t limit = 5;
  EXPECT_CH_OK(ch_memory_limit(&limit, ch_device_cpu()));
  EXPECT_EQ(limit, 0u);
  EXPECT_CH_ERR(CH_ERR_INVALID_ARGUMENT, ch_memory_limit(nullptr, ch_device_cpu()));
  ch_memory_set_oom_hook(nullptr, nullptr);
  ch_memory_stats s;
  EXPECT_CH_OK(ch_memory_stats_get(&s, ch_device_cpu()));
  EXPECT_CH_OK(ch_memory_empty_cache(ch_device_cpu()));
}

}  // namespace
