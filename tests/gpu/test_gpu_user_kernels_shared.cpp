// The emulated NVRTC through libchainerc.so (test_gpu_user_kernels.cpp links
// the static library for its internal counters): the shared library exports
// only ch_* symbols, so the compiled kernel object must reach the emulator
// through its function table. Seed 000's MulAdd on cuda:0 against the CPU.
#include <ch/ch.h>
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "require_gpu.h"

namespace {

std::vector<float> muladd_on(ch_device d, const std::vector<std::vector<float>>& in) {
  ch_elementwise_kernel* k = nullptr;
  EXPECT_EQ(ch_elementwise_kernel_new(&k, "float32 x, float32 y, float32 z", "float32 w",
                                      "w = x * y + z", "muladd_fwd"),
            CH_OK)
      << ch_error_message();
  const int64_t shape[] = {static_cast<int64_t>(in[0].size())};
  std::vector<ch_array*> arrays;
  for (const auto& v : in) {
    ch_array* a = nullptr;
    EXPECT_EQ(ch_array_new(&a, CH_FLOAT32, shape, 1, v.data(), d), CH_OK) << ch_error_message();
    arrays.push_back(a);
  }
  ch_array* out = nullptr;
  EXPECT_EQ(ch_elementwise_kernel_call(k, arrays.data(), arrays.size(), &out, 1), CH_OK)
      << ch_error_message();
  std::vector<float> w(in[0].size());
  if (out) {
    EXPECT_EQ(ch_array_device(out).type, d.type);
    EXPECT_EQ(ch_array_read(out, w.data(), w.size() * sizeof(float)), CH_OK);
  }
  ch_array_release(out);
  for (ch_array* a : arrays) ch_array_release(a);
  ch_elementwise_kernel_release(k);
  return w;
}

TEST(GpuUserKernelsSharedLibrary, SeedMulAddAgreesWithCpu) {
  if (ch_cuda_device_count() < 1) CH_GPU_SKIP() << "no (emulated) CUDA device";
  if (!ch_kernel_cpu_supported()) GTEST_SKIP() << "user kernels do not run on the CPU here";
  const size_t n = 1025;
  std::vector<std::vector<float>> in(3, std::vector<float>(n));
  for (size_t j = 0; j < 3; ++j)
    for (size_t i = 0; i < n; ++i) in[j][i] = std::sin(static_cast<float>(i * (j + 1)));
  const std::vector<float> cpu = muladd_on(ch_device_cpu(), in);
  const std::vector<float> gpu = muladd_on(ch_device_cuda(0), in);
  for (size_t i = 0; i < n; ++i) {
    const float want = in[0][i] * in[1][i] + in[2][i];
    EXPECT_NEAR(gpu[i], cpu[i], 1e-6f * std::abs(cpu[i])) << i;
    EXPECT_NEAR(gpu[i], want, 1e-6f) << i;
  }
}

}  // namespace
