// Internals of the CUDA backend (cuda/runtime/): the per-device cuBLAS handle
// and cuRAND generator, created lazily, and the per-device seed derivation.
// Built only with the CUDA backend; GPU tests skip without a device.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <set>
#include <vector>

#include "core/array.h"
#include "core/config.h"
#include "core/device_backend.h"
#include "cuda/runtime/cuda_util.h"
#include "cuda/runtime/libraries.h"
#include "cuda/runtime/memory.h"
#include "require_gpu.h"
#if defined(CH_HAVE_CUDNN)
#include <cudnn.h>

#include "cuda/runtime/lazy_libraries.h"
#endif

using namespace chainerc;

namespace {

class GpuInternal : public ::testing::Test {
 protected:
  void SetUp() override {
    if (cuda::device_count() == 0)
      CH_GPU_SKIP() << "no CUDA device: " << cuda::unavailable_reason();
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

// Column-major reference: C = alpha * op(A) * op(B) + beta * C.
template <typename T>
void reference_gemm(bool ta, bool tb, int m, int n, int k, T alpha, const std::vector<T>& a,
                    int lda, const std::vector<T>& b, int ldb, T beta, std::vector<T>& c, int ldc) {
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < m; ++i) {
      double s = 0;
      for (int p = 0; p < k; ++p) {
        double av = ta ? a[p + static_cast<size_t>(i) * lda] : a[i + static_cast<size_t>(p) * lda];
        double bv = tb ? b[j + static_cast<size_t>(p) * ldb] : b[p + static_cast<size_t>(j) * ldb];
        s += av * bv;
      }
      T& cv = c[i + static_cast<size_t>(j) * ldc];
      cv = static_cast<T>(alpha * s + beta * static_cast<double>(cv));
    }
}

template <typename T>
Array to_gpu(const std::vector<T>& v, DType dt) {
  Array d = Array::empty(dt, Shape({static_cast<int64_t>(v.size())}), Device{CH_DEVICE_CUDA, 0});
  cuda::check(cudaMemcpy(d.raw(), v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice), "test",
              "cudaMemcpy");
  return d;
}

template <typename T>
void check_all_gemm_cases(DType dt, double tol) {
  const int m = 5, n = 7, k = 3;
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      // Leading dimensions padded beyond the rows stored.
      const int lda = (ta ? k : m) + 2, ldb = (tb ? n : k) + 3, ldc = m + 1;
      std::vector<T> a(static_cast<size_t>(lda) * (ta ? m : k)),
          b(static_cast<size_t>(ldb) * (tb ? k : n)), c(static_cast<size_t>(ldc) * n);
      for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<T>(std::sin(0.7 * i + 1));
      for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<T>(std::cos(0.3 * i));
      for (size_t i = 0; i < c.size(); ++i) c[i] = static_cast<T>(0.5 * i - 3);
      Array da = to_gpu(a, dt), db = to_gpu(b, dt), dc = to_gpu(c, dt);
      const T alpha = static_cast<T>(1.5), beta = static_cast<T>(-0.75);
      cuda::gemm(0, dt, ta, tb, m, n, k, alpha, da.raw(), lda, db.raw(), ldb, beta, dc.raw(), ldc);
      reference_gemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
      std::vector<T> got(c.size());
      cuda::check(cudaMemcpy(got.data(), dc.raw(), got.size() * sizeof(T), cudaMemcpyDeviceToHost),
                  "test", "cudaMemcpy");
      for (size_t i = 0; i < c.size(); ++i)
        EXPECT_NEAR(got[i], c[i], tol) << "ta=" << ta << " tb=" << tb << " at " << i
                                       << (i % ldc >= m ? " (padding must stay untouched)" : "");
    }
}

TEST_F(GpuInternal, GemmAllTransposesPaddedLeadingDimensionsAndBeta) {
  check_all_gemm_cases<float>(DType::Float32, 1e-5);
  check_all_gemm_cases<double>(DType::Float64, 1e-12);
}

// ch_config_set_allow_tf32: float32 GEMMs run with cuBLAS's TF32 math mode
// when allowed and its default (full float32) otherwise; float64 is unchanged.
TEST_F(GpuInternal, AllowTf32SetsTheMathModeOfFloat32Gemms) {
  const int m = 6, n = 5, k = 257;
  std::vector<float> a(static_cast<size_t>(m) * k), b(static_cast<size_t>(k) * n);
  for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>(std::sin(0.37 * i + 0.1));
  for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<float>(std::cos(0.23 * i + 0.2));
  std::vector<float> ref(static_cast<size_t>(m) * n, 0.f);
  reference_gemm(false, false, m, n, k, 1.f, a, m, b, k, 0.f, ref, m);
  Array da = to_gpu(a, DType::Float32), db = to_gpu(b, DType::Float32);
  // The largest |C - reference| of one GEMM, and the math mode it ran with.
  auto run = [&](cublasMath_t* mode) {
    Array dc = Array::zeros(DType::Float32, Shape({m * n}), Device{CH_DEVICE_CUDA, 0});
    cuda::gemm(0, DType::Float32, false, false, m, n, k, 1.0, da.raw(), m, db.raw(), k, 0.0,
               dc.raw(), m);
    EXPECT_EQ(cublasGetMathMode(cuda::cublas_handle(0), mode), CUBLAS_STATUS_SUCCESS);
    Array c = dc.to_device(Device{});
    double worst = 0;
    for (int i = 0; i < m * n; ++i)
      worst = std::max(worst, std::fabs(static_cast<double>(c.data<float>()[i]) - ref[i]));
    return worst;
  };
  ASSERT_FALSE(config::allow_tf32());  // off by default
  cublasMath_t mode{};
  const double full = run(&mode);
  EXPECT_EQ(mode, CUBLAS_DEFAULT_MATH);
  EXPECT_LT(full, 1e-4);  // float32 accumulation of 257 terms of magnitude <= 1
  config::set_allow_tf32(true);
  const double tf32 = run(&mode);
  config::set_allow_tf32(false);
  EXPECT_EQ(mode, CUBLAS_TF32_TENSOR_OP_MATH);
  // Inputs with a 10-bit mantissa: each product within about 2^-10 of exact.
  EXPECT_LT(tf32, k * std::ldexp(1.0, -10));
#if defined(CH_CUDA_EMULATION)
  // The emulator rounds the inputs to TF32, as the tensor cores do (a real
  // GPU may still choose a non-tensor-core kernel, so not asserted there).
  EXPECT_GT(tf32, 10 * full) << "TF32 inputs should lose precision";
#endif
  EXPECT_EQ(run(&mode), full) << "switching TF32 off restores full float32 results";
  EXPECT_EQ(mode, CUBLAS_DEFAULT_MATH);
}

TEST_F(GpuInternal, GemmArgumentsCublasRefusesAreErrorsNamingThem) {
  Array a = Array::zeros(DType::Float32, Shape({64}), Device{CH_DEVICE_CUDA, 0});
  // lda below the rows of A as stored (m = 4, not transposed).
  try {
    cuda::gemm(0, DType::Float32, false, false, 4, 2, 2, 1.0, a.raw(), 3, a.raw(), 2, 0.0, a.raw(),
               4);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), CH_ERR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(e.what()).find("lda=3"), std::string::npos) << e.what();
  }
  try {
    cuda::gemm(0, DType::Float32, false, false, -1, 2, 2, 1.0, a.raw(), 1, a.raw(), 2, 0.0, a.raw(),
               1);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), CH_ERR_INVALID_ARGUMENT);
  }
  // ldb below k when B is transposed: rows stored are n.
  EXPECT_THROW(cuda::gemm(0, DType::Float32, false, true, 2, 4, 2, 1.0, a.raw(), 2, a.raw(), 3, 0.0,
                          a.raw(), 2),
               Error);
}

// The runtime's fill and uniform-map kernels on sizes that are not multiples
// of a block (256 threads), every element checked.
TEST_F(GpuInternal, FillKernelsCoverSizesThatAreNotMultiplesOfABlock) {
  DeviceBackend& b = backend_for(Device{CH_DEVICE_CUDA, 0}, "test");
  for (int64_t n : {int64_t{1}, int64_t{31}, int64_t{1025}, int64_t{100003}}) {
    for (DType dt : {DType::Float32, DType::Float64, DType::Int32}) {
      Array a = Array::empty(dt, Shape({n}), Device{CH_DEVICE_CUDA, 0});
      b.fill(0, a.raw(), dt, n, -3.0);
      Array h = a.to_device(Device{});
      int64_t wrong = 0;
      for (int64_t i = 0; i < n; ++i) wrong += h.get(i) != -3.0;
      EXPECT_EQ(wrong, 0) << "n=" << n << " " << dtype_name(dt);
    }
    Array u = Array::empty(DType::Float32, Shape({n}), Device{CH_DEVICE_CUDA, 0});
    b.fill_random(0, u.raw(), DType::Float32, n, false, 2.0, 5.0);
    Array h = u.to_device(Device{});
    for (int64_t i = 0; i < n; ++i) {
      ASSERT_GE(h.data<float>()[i], 2.0f) << i;
      ASSERT_LT(h.data<float>()[i], 5.0f) << i;
    }
  }
}

#if defined(CH_HAVE_CUDNN)
// libcudnn.so.9 is not linked: cuda/runtime/lazy_libraries.cpp opens it on
// the first cuDNN call. Asking its version needs no GPU.
TEST(CudnnLibrary, IsOpenedOnFirstUseAndIsVersion9) {
  const size_t v = cudnnGetVersion();
  if (v == 0) CH_GPU_SKIP() << "libcudnn.so.9 not loadable: " << cuda::load_error("cudnn");
  EXPECT_GE(v, 90000u);
  EXPECT_LT(v, 100000u);
  EXPECT_EQ(cuda::load_error("cudnn"), "");
  EXPECT_STRNE(cudnnGetErrorString(CUDNN_STATUS_BAD_PARAM), "");
}
#endif

#if defined(CH_CUDA_EMULATION)
TEST_F(GpuInternal, CublasKeepsItsWorkspaceFromThePool) {
  // cublasSetStream resets a workspace set before it (the emulator models
  // cuBLAS's documented behaviour): the handle must end with ours.
  cublasHandle_t h = cuda::cublas_handle(0);
  size_t bytes = 0;
  void* ws = cuda::emu::cublas_workspace(h, &bytes);
  EXPECT_NE(ws, nullptr);
  EXPECT_EQ(bytes, size_t{32} << 20);
  EXPECT_EQ(cuda::emu::device_of(ws, nullptr), 0);
}

TEST_F(GpuInternal, FailedReleasesLeaveNoLastErrorBehind) {
  int not_pinned = 0;
  backend_for(Device{CH_DEVICE_CUDA, 0}, "test").deallocate_pinned(&not_pinned);
  EXPECT_EQ(cudaPeekAtLastError(), cudaSuccess);
  cudaStream_t s = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamDefault), cudaSuccess);
  ASSERT_EQ(cudaStreamDestroy(s), cudaSuccess);
  backend_for(Device{CH_DEVICE_CUDA, 0}, "test").stream_destroy(0, s);  // twice: an error
  EXPECT_EQ(cudaPeekAtLastError(), cudaSuccess);
}

TEST_F(GpuInternal, PeerCopyOnAStreamWaitsForTheSourceDevice) {
  if (cuda::device_count() < 2) CH_GPU_SKIP_NEEDS_TWO() << "needs two CUDA devices";
  std::vector<float> v = {1, 2, 3, 4};
  Array src = to_gpu(v, DType::Float32);
  Array dst = Array::zeros(DType::Float32, Shape({4}), Device{CH_DEVICE_CUDA, 1});
  DeviceBackend& b = backend_for(Device{CH_DEVICE_CUDA, 1}, "test");
  StreamHandle s = b.stream_create(1);
  // The emulated cudaEventRecord refuses an event of another device than the
  // stream's, as the runtime does: this also checks the event's device.
  b.copy(dst.raw(), Device{CH_DEVICE_CUDA, 1}, src.raw(), Device{CH_DEVICE_CUDA, 0}, 16, s);
  b.stream_synchronize(1, s);
  b.stream_destroy(1, s);
  Array back = dst.to_device(Device{});
  for (int i = 0; i < 4; ++i) EXPECT_EQ(back.data<float>()[i], v[i]);
}

// Run alone in a fresh process (the meson test 'gpu_only_cuda1'): a process
// that works only on cuda:1 makes no context on cuda:0.
TEST(GpuOnlyCuda1, MakesNoContextOnCuda0) {
  if (!std::getenv("CH_TEST_ONLY_CUDA1")) GTEST_SKIP() << "run by the test 'gpu_only_cuda1'";
  ASSERT_FALSE(cuda::emu::context_created(0)) << "something before the test touched cuda:0";
  Device d1{CH_DEVICE_CUDA, 1};
  Array a = Array::empty(DType::Float32, Shape({100}), d1);
  backend_for(d1, "test").fill(1, a.raw(), DType::Float32, 100, 2.5);
  Array h = a.to_device(Device{});
  EXPECT_EQ(h.data<float>()[99], 2.5f);
  Array r = Array::empty(DType::Float32, Shape({3}), d1);
  backend_for(d1, "test").fill_random(1, r.raw(), DType::Float32, 3, true, 0.0, 1.0);
  EXPECT_TRUE(cuda::emu::context_created(1));
  EXPECT_FALSE(cuda::emu::context_created(0));
}
#endif

}  // namespace
