// Internals of the CUDA backend (cuda/runtime/): the per-device cuBLAS handle
// and cuRAND generator, created lazily, and the per-device seed derivation.
// Built only with the CUDA backend; GPU tests skip without a device.
#include <gtest/gtest.h>

#include <set>
#include <vector>

#include "core/array.h"
#include "cuda/runtime/cuda_util.h"
#include "cuda/runtime/libraries.h"
#include "cuda/runtime/memory.h"

using namespace chainerc;

namespace {

class GpuInternal : public ::testing::Test {
 protected:
  void SetUp() override {
    if (cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device: " << cuda::unavailable_reason();
  }
};

TEST(CudaSeeds, DifferPerDeviceAndRepeat) {
  std::set<uint64_t> seen;
  for (int32_t d = 0; d < 16; ++d) {
    EXPECT_EQ(cuda::device_seed(1234, d), cuda::device_seed(1234, d));
    seen.insert(cuda::device_seed(1234, d));
  }
  EXPECT_EQ(seen.size(), 16u);
  EXPECT_NE(cuda::device_seed(1, 0), cuda::device_seed(2, 0));
}

TEST(CudaDevices, MissingDevicesAreDeviceErrors) {
  try {
    cuda::require_device(cuda::device_count(), "test");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), CH_ERR_DEVICE);
    EXPECT_NE(std::string(e.what()).find("no CUDA device"), std::string::npos) << e.what();
  }
}

TEST_F(GpuInternal, CublasHandleIsCreatedOnceWithItsWorkspaceFromThePool) {
  ch_memory_stats before = cuda::device_allocator(0, "test").stats();
  cublasHandle_t h = cuda::cublas_handle(0);
  ASSERT_NE(h, nullptr);
  EXPECT_EQ(cuda::cublas_handle(0), h);
  ch_memory_stats after = cuda::device_allocator(0, "test").stats();
  EXPECT_GE(after.bytes_in_use - before.bytes_in_use, 0);  // 32 MiB the first time it is made

  // C = A * B for row-major A (2x3) and B (3x2), as column-major B^T * A^T.
  std::vector<float> a = {1, 2, 3, 4, 5, 6}, b = {7, 8, 9, 10, 11, 12};
  Array da = Array(Buffer::allocate(sizeof(float) * 6, Device{CH_DEVICE_CUDA, 0}), DType::Float32,
                   Shape({2, 3}));
  Array db = Array::empty(DType::Float32, Shape({3, 2}), Device{CH_DEVICE_CUDA, 0});
  Array dc = Array::zeros(DType::Float32, Shape({2, 2}), Device{CH_DEVICE_CUDA, 0});
  cuda::check(cudaMemcpy(da.raw(), a.data(), 24, cudaMemcpyHostToDevice), "test", "cudaMemcpy");
  cuda::check(cudaMemcpy(db.raw(), b.data(), 24, cudaMemcpyHostToDevice), "test", "cudaMemcpy");
  const float one = 1, zero = 0;
  ASSERT_EQ(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, 3, &one, db.data<float>(), 2,
                        da.data<float>(), 3, &zero, dc.data<float>(), 2),
            CUBLAS_STATUS_SUCCESS);
  std::vector<float> c(4);
  cuda::check(cudaMemcpy(c.data(), dc.raw(), 16, cudaMemcpyDeviceToHost), "test", "cudaMemcpy");
  EXPECT_EQ(c, (std::vector<float>{58, 64, 139, 154}));
}

TEST_F(GpuInternal, CurandGeneratorIsPerDeviceAndReseedable) {
  std::unique_lock<std::mutex> lock;
  curandGenerator_t g = cuda::curand_generator(0, lock);
  ASSERT_NE(g, nullptr);
  lock.unlock();
  EXPECT_EQ(cuda::curand_generator(0, lock), g);
  lock.unlock();
  Array x = Array::empty(DType::Float32, Shape({64}), Device{CH_DEVICE_CUDA, 0});
  cuda::seed_generator(0, 9);
  {
    std::unique_lock<std::mutex> l;
    ASSERT_EQ(curandGenerateUniform(cuda::curand_generator(0, l), x.data<float>(), 64),
              CURAND_STATUS_SUCCESS);
  }
  Array first = x.to_device(Device{});
  cuda::seed_generator(0, 9);
  {
    std::unique_lock<std::mutex> l;
    ASSERT_EQ(curandGenerateUniform(cuda::curand_generator(0, l), x.data<float>(), 64),
              CURAND_STATUS_SUCCESS);
  }
  Array second = x.to_device(Device{});
  for (int i = 0; i < 64; ++i) EXPECT_EQ(first.data<float>()[i], second.data<float>()[i]);
}

}  // namespace
