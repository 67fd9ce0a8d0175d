// The CUDA emulator's own tests (-Dcuda-emulation=true): kernels written as
// for nvcc, launched through chainerc::cuda::launch and run on the CPU.
// References are computed on the host by plain loops.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <numeric>
#include <string>
#include <vector>

#include "cuda/runtime/launch.h"

using chainerc::cuda::launch;
namespace emu = chainerc::cuda::emu;

namespace {

// ---- kernels ----

// Sum of each block's 256 elements by a shared-memory tree; kSync = false
// leaves out the barrier inside the tree (the classic bug).
template <bool kSync>
__global__ void block_sum(const float* x, float* out, int n) {
  __shared__ float s[256];
  const int t = threadIdx.x;
  const int i = blockIdx.x * blockDim.x + t;
  s[t] = i < n ? x[i] : 0.0f;
  __syncthreads();
  for (int stride = blockDim.x / 2; stride > 0; stride >>= 1) {
    if (t < stride) s[t] += s[t + stride];
    if (kSync) __syncthreads();
  }
  if (t == 0) out[blockIdx.x] = s[0];
}

// A barrier inside a branch that only some threads take.
__global__ void divergent_barrier(float* out) {
  if (threadIdx.x < 16) __syncthreads();
  out[threadIdx.x] = 1.0f;
}

// Every thread reaches a barrier, but two different ones.
__global__ void two_barriers(float* out) {
  if (threadIdx.x % 2)
    __syncthreads();
  else
    __syncthreads();
  out[threadIdx.x] = 1.0f;
}

__global__ void nothing(int* out) {
  if (threadIdx.x == 0 && blockIdx.x == 0) *out = 1;
}

// Each thread writes its global linear index from 3-D indices.
__global__ void indices_3d(int* out) {
  const int bx = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
  const int tx = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  const int per_block = blockDim.x * blockDim.y * blockDim.z;
  atomicAdd(&out[bx * per_block + tx], bx * 1000 + tx + 1);
}

// Reverses each block's elements through dynamic shared memory.
__global__ void reverse_blocks(const float* x, float* y) {
  CH_EXTERN_SHARED(float, s);
  const int t = threadIdx.x, base = blockIdx.x * blockDim.x;
  s[t] = x[base + t];
  __syncthreads();
  y[base + t] = s[blockDim.x - 1 - t];
}

// Reads dynamic shared memory before anything wrote it.
__global__ void read_unwritten(unsigned* out) {
  CH_EXTERN_SHARED(unsigned, s);
  out[threadIdx.x] = s[threadIdx.x];
}

// Warp operations: out has 8 values per thread.
__global__ void warp_ops(const float* x, float* out, unsigned* votes) {
  const int t = threadIdx.x;
  const unsigned full = 0xffffffffu;
  const float v = x[t];
  float* o = out + 8 * t;
  o[0] = __shfl_sync(full, v, 3);
  o[1] = __shfl_up_sync(full, v, 1);
  o[2] = __shfl_down_sync(full, v, 2);
  o[3] = __shfl_xor_sync(full, v, 5);
  o[4] = __shfl_sync(full, v, 1, 8);
  o[5] = __shfl_down_sync(full, v, 3, 8);
  o[6] = static_cast<float>(__shfl_xor_sync(full, static_cast<double>(v) * 2.0, 16));
  // Warp sum by xor butterfly.
  float s = v;
  for (int m = 16; m > 0; m >>= 1) s += __shfl_xor_sync(full, s, m);
  o[7] = s;
  const int lane = t % 32;
  votes[3 * t] = __ballot_sync(full, lane % 3 == 0);
  votes[3 * t + 1] = __all_sync(full, v >= 0.0f);
  votes[3 * t + 2] = __any_sync(full, lane == 7);
}

__global__ void atomics(float* f, double* d, int* i, int* mx, int* mn, unsigned* cas_count,
                        int* exch) {
  const int g = blockIdx.x * blockDim.x + threadIdx.x;
  atomicAdd(f, 1.0f);
  atomicAdd(d, 0.5);
  atomicAdd(i, 2);
  atomicMax(mx, (g * 37) % 1001);
  atomicMin(mn, 5000 - (g * 37) % 1001);
  unsigned old = *cas_count, seen;
  while ((seen = atomicCAS(cas_count, old, old + 1)) != old) old = seen;
  atomicExch(exch, 7);
}

// Dynamic parallelism-free math overloads CUDA provides.
__global__ void math_overloads(const float* x, float* y, const int* a, int* b) {
  const int t = threadIdx.x;
  y[t] = max(x[t], 0.0f) + min(x[t], 1.0f) + sqrtf(fabsf(x[t])) + rsqrtf(4.0f);
  b[t] = max(a[t], 3) + min(a[t], -3);
}

template <typename T>
std::vector<T> device_copy(const std::vector<T>& h, T** d) {
  EXPECT_EQ(cudaMalloc(reinterpret_cast<void**>(d), h.size() * sizeof(T)), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(*d, h.data(), h.size() * sizeof(T), cudaMemcpyHostToDevice), cudaSuccess);
  return h;
}
template <typename T>
std::vector<T> host_copy(const T* d, size_t n) {
  std::vector<T> h(n);
  EXPECT_EQ(cudaMemcpy(h.data(), d, n * sizeof(T), cudaMemcpyDeviceToHost), cudaSuccess);
  return h;
}

// ---- tests ----

TEST(Emulator, BlockReductionWithItsBarriersIsExact) {
  const int n = 1000, blocks = 4;
  std::vector<float> x(n);
  std::iota(x.begin(), x.end(), 1.0f);
  float *dx, *dout;
  device_copy(x, &dx);
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&dout), blocks * sizeof(float)), cudaSuccess);
  ASSERT_EQ(launch(block_sum<true>, blocks, 256, 0, nullptr, dx, dout, n), cudaSuccess);
  std::vector<float> out = host_copy(dout, blocks);
  for (int b = 0; b < blocks; ++b) {
    double want = 0;
    for (int i = b * 256; i < std::min(n, (b + 1) * 256); ++i) want += x[i];
    EXPECT_EQ(out[b], static_cast<float>(want)) << "block " << b;
  }
  cudaFree(dx);
  cudaFree(dout);
}

TEST(Emulator, BlockReductionWithoutItsBarrierGivesWrongSums) {
  const int n = 1024, blocks = 4;
  std::vector<float> x(n, 1.0f);
  float *dx, *dout;
  device_copy(x, &dx);
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&dout), blocks * sizeof(float)), cudaSuccess);
  ASSERT_EQ(launch(block_sum<false>, blocks, 256, 0, nullptr, dx, dout, n), cudaSuccess);
  std::vector<float> out = host_copy(dout, blocks);
  int wrong = 0;
  for (int b = 0; b < blocks; ++b) wrong += out[b] != 256.0f;
  EXPECT_EQ(wrong, blocks) << "the shuffled resume order should expose the missing barrier";
  cudaFree(dx);
  cudaFree(dout);
}

TEST(Emulator, BarrierReachedByPartOfTheBlockIsReported) {
  float* d;
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&d), 64 * sizeof(float)), cudaSuccess);
  EXPECT_EQ(launch(divergent_barrier, 1, 64, 0, nullptr, d), cudaErrorLaunchFailure);
  std::string m = emu::last_launch_message();
  EXPECT_NE(m.find("divergent __syncthreads"), std::string::npos) << m;
  EXPECT_NE(m.find("16 of 64"), std::string::npos) << m;
  EXPECT_EQ(cudaGetLastError(), cudaErrorLaunchFailure);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);  // read and cleared

  EXPECT_EQ(launch(two_barriers, 1, 64, 0, nullptr, d), cudaErrorLaunchFailure);
  m = emu::last_launch_message();
  EXPECT_NE(m.find("and others at"), std::string::npos) << m;
  cudaGetLastError();
  // The emulator is usable afterwards.
  int* flag;
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&flag), sizeof(int)), cudaSuccess);
  EXPECT_EQ(launch(nothing, 1, 32, 0, nullptr, flag), cudaSuccess);
  EXPECT_EQ(host_copy(flag, 1)[0], 1);
  cudaFree(flag);
  cudaFree(d);
}

TEST(Emulator, LaunchesBeyondAnH100sLimitsAreRefused) {
  int* d;
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&d), sizeof(int)), cudaSuccess);
  EXPECT_EQ(launch(nothing, 1, 1024, 0, nullptr, d), cudaSuccess);
  EXPECT_EQ(launch(nothing, 1, 1025, 0, nullptr, d), cudaErrorInvalidConfiguration);
  EXPECT_NE(std::string(emu::last_launch_message()).find("1025 threads"), std::string::npos)
      << emu::last_launch_message();
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidConfiguration);
  EXPECT_EQ(launch(nothing, 1, dim3(32, 32, 2), 0, nullptr, d), cudaErrorInvalidConfiguration);
  EXPECT_EQ(launch(nothing, 1, dim3(1, 1, 65), 0, nullptr, d), cudaErrorInvalidConfiguration);
  EXPECT_EQ(launch(nothing, dim3(1, 65536), 32, 0, nullptr, d), cudaErrorInvalidConfiguration);
  EXPECT_EQ(launch(nothing, 0, 32, 0, nullptr, d), cudaErrorInvalidConfiguration);
  EXPECT_EQ(launch(nothing, 1, 32, 227 * 1024 + 1, nullptr, d), cudaErrorInvalidConfiguration);
  cudaGetLastError();
  cudaFree(d);
}

__global__ void shared_user(int* out) {
  CH_EXTERN_SHARED(int, s);
  s[threadIdx.x] = 1;
  if (threadIdx.x == 0) out[0] = s[0];
}

// As on a GPU: more than 48 KiB of dynamic shared memory only after
// cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, n),
// and then at most n (at most 227 KiB on an H100).
TEST(Emulator, DynamicSharedMemoryBeyond48KiBNeedsTheAttribute) {
  int* d;
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&d), sizeof(int)), cudaSuccess);
  EXPECT_EQ(launch(shared_user, 1, 32, 48 * 1024, nullptr, d), cudaSuccess);
  EXPECT_EQ(launch(shared_user, 1, 32, 48 * 1024 + 4, nullptr, d), cudaErrorInvalidValue);
  EXPECT_NE(std::string(emu::last_launch_message()).find("cudaFuncSetAttribute"), std::string::npos)
      << emu::last_launch_message();
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidValue);
  EXPECT_EQ(
      cudaFuncSetAttribute(shared_user, cudaFuncAttributeMaxDynamicSharedMemorySize, 100 * 1024),
      cudaSuccess);
  EXPECT_EQ(launch(shared_user, 1, 32, 100 * 1024, nullptr, d), cudaSuccess);
  EXPECT_EQ(host_copy(d, 1)[0], 1);
  EXPECT_EQ(launch(shared_user, 1, 32, 100 * 1024 + 4, nullptr, d), cudaErrorInvalidValue);
  cudaGetLastError();
  // Another kernel keeps the default.
  EXPECT_EQ(launch(nothing, 1, 32, 64 * 1024, nullptr, d), cudaErrorInvalidValue);
  cudaGetLastError();
  EXPECT_EQ(cudaFuncSetAttribute(shared_user, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                 227 * 1024 + 1),
            cudaErrorInvalidValue);
  cudaGetLastError();
  cudaFree(d);
}

TEST(Emulator, ThreeDimensionalIndicesCoverTheGridOnce) {
  const dim3 grid(2, 3, 4), block(4, 2, 3);
  const int n = 2 * 3 * 4 * 4 * 2 * 3;
  int* d;
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&d), n * sizeof(int)), cudaSuccess);
  ASSERT_EQ(cudaMemsetAsync(d, 0, n * sizeof(int), nullptr), cudaSuccess);
  ASSERT_EQ(launch(indices_3d, grid, block, 0, nullptr, d), cudaSuccess);
  std::vector<int> out = host_copy(d, n);
  for (int i = 0; i < n; ++i) EXPECT_EQ(out[i], i / 24 * 1000 + i % 24 + 1) << i;
  cudaFree(d);
}

TEST(Emulator, DynamicSharedMemoryIsPerBlockAndStartsPoisoned) {
  const int block = 96, blocks = 3, n = block * blocks;
  std::vector<float> x(n);
  std::iota(x.begin(), x.end(), 0.0f);
  float *dx, *dy;
  device_copy(x, &dx);
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&dy), n * sizeof(float)), cudaSuccess);
  ASSERT_EQ(launch(reverse_blocks, blocks, block, block * sizeof(float), nullptr, dx, dy),
            cudaSuccess);
  std::vector<float> y = host_copy(dy, n);
  for (int i = 0; i < n; ++i) EXPECT_EQ(y[i], x[i / block * block + block - 1 - i % block]) << i;
  unsigned* du;
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&du), 32 * sizeof(unsigned)), cudaSuccess);
  ASSERT_EQ(launch(read_unwritten, 1, 32, 32 * sizeof(unsigned), nullptr, du), cudaSuccess);
  for (unsigned v : host_copy(du, 32)) EXPECT_EQ(v, 0xffffffffu);
  cudaFree(dx);
  cudaFree(dy);
  cudaFree(du);
}

TEST(Emulator, WarpShufflesAndVotesFollowCudaSemantics) {
  const int n = 64;  // two warps
  std::vector<float> x(n);
  for (int i = 0; i < n; ++i) x[i] = static_cast<float>(i * 3 + 1);
  float *dx, *dout;
  unsigned* dv;
  device_copy(x, &dx);
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&dout), 8 * n * sizeof(float)), cudaSuccess);
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&dv), 3 * n * sizeof(unsigned)), cudaSuccess);
  ASSERT_EQ(launch(warp_ops, 1, n, 0, nullptr, dx, dout, dv), cudaSuccess);
  std::vector<float> o = host_copy(dout, 8 * n);
  std::vector<unsigned> v = host_copy(dv, 3 * n);
  unsigned ballot = 0;
  for (int l = 0; l < 32; l += 3) ballot |= 1u << l;
  for (int t = 0; t < n; ++t) {
    const int w = t / 32 * 32, lane = t % 32, seg = lane / 8 * 8;
    EXPECT_EQ(o[8 * t + 0], x[w + 3]) << t;
    EXPECT_EQ(o[8 * t + 1], x[w + (lane >= 1 ? lane - 1 : lane)]) << t;
    EXPECT_EQ(o[8 * t + 2], x[w + (lane + 2 < 32 ? lane + 2 : lane)]) << t;
    EXPECT_EQ(o[8 * t + 3], x[w + (lane ^ 5)]) << t;
    EXPECT_EQ(o[8 * t + 4], x[w + seg + 1]) << t;
    EXPECT_EQ(o[8 * t + 5], x[w + (lane % 8 + 3 < 8 ? lane + 3 : lane)]) << t;
    EXPECT_EQ(o[8 * t + 6], 2.0f * x[w + (lane ^ 16)]) << t;
    float sum = 0;
    for (int l = 0; l < 32; ++l) sum += x[w + l];
    EXPECT_EQ(o[8 * t + 7], sum) << t;
    EXPECT_EQ(v[3 * t], ballot) << t;
    EXPECT_EQ(v[3 * t + 1], 1u) << t;
    EXPECT_EQ(v[3 * t + 2], 1u) << t;
  }
  cudaFree(dx);
  cudaFree(dout);
  cudaFree(dv);
}

TEST(Emulator, AtomicsCountEveryThread) {
  const int blocks = 5, threads = 200, n = blocks * threads;
  float* f;
  double* d;
  int *i, *mx, *mn, *ex;
  unsigned* cas;
  device_copy(std::vector<float>{0}, &f);
  device_copy(std::vector<double>{0}, &d);
  device_copy(std::vector<int>{0}, &i);
  device_copy(std::vector<int>{-1}, &mx);
  device_copy(std::vector<int>{1 << 20}, &mn);
  device_copy(std::vector<unsigned>{0}, &cas);
  device_copy(std::vector<int>{0}, &ex);
  ASSERT_EQ(launch(atomics, blocks, threads, 0, nullptr, f, d, i, mx, mn, cas, ex), cudaSuccess);
  int want_max = 0, want_min = 1 << 20;
  for (int g = 0; g < n; ++g) {
    want_max = std::max(want_max, (g * 37) % 1001);
    want_min = std::min(want_min, 5000 - (g * 37) % 1001);
  }
  EXPECT_EQ(host_copy(f, 1)[0], static_cast<float>(n));
  EXPECT_EQ(host_copy(d, 1)[0], 0.5 * n);
  EXPECT_EQ(host_copy(i, 1)[0], 2 * n);
  EXPECT_EQ(host_copy(mx, 1)[0], want_max);
  EXPECT_EQ(host_copy(mn, 1)[0], want_min);
  EXPECT_EQ(host_copy(cas, 1)[0], static_cast<unsigned>(n));
  EXPECT_EQ(host_copy(ex, 1)[0], 7);
  for (void* p :
       {static_cast<void*>(f), static_cast<void*>(d), static_cast<void*>(i), static_cast<void*>(mx),
        static_cast<void*>(mn), static_cast<void*>(cas), static_cast<void*>(ex)})
    cudaFree(p);
}

TEST(Emulator, MathOverloadsAreCudas) {
  std::vector<float> x = {-4.0f, 0.25f, 9.0f};
  std::vector<int> a = {-5, 0, 7};
  float *dx, *dy;
  int *da, *db;
  device_copy(x, &dx);
  device_copy(a, &da);
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&dy), 3 * sizeof(float)), cudaSuccess);
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&db), 3 * sizeof(int)), cudaSuccess);
  ASSERT_EQ(launch(math_overloads, 1, 3, 0, nullptr, dx, dy, da, db), cudaSuccess);
  std::vector<float> y = host_copy(dy, 3);
  std::vector<int> b = host_copy(db, 3);
  for (int t = 0; t < 3; ++t) {
    EXPECT_FLOAT_EQ(
        y[t], std::max(x[t], 0.0f) + std::min(x[t], 1.0f) + std::sqrt(std::fabs(x[t])) + 0.5f);
    EXPECT_EQ(b[t], std::max(a[t], 3) + std::min(a[t], -3));
  }
  cudaFree(dx);
  cudaFree(dy);
  cudaFree(da);
  cudaFree(db);
}

TEST(EmulatorRuntime, FreeOfUnknownPointersAndOverrunningCopiesAreErrors) {
  int x = 0;
  EXPECT_EQ(cudaFree(&x), cudaErrorInvalidValue);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidValue);
  void* d;
  ASSERT_EQ(cudaMalloc(&d, 16), cudaSuccess);
  char host[32] = {};
  EXPECT_EQ(cudaMemcpy(d, host, 32, cudaMemcpyHostToDevice), cudaErrorInvalidValue);
  EXPECT_EQ(cudaMemcpy(d, host, 16, cudaMemcpyHostToDevice), cudaSuccess);
  EXPECT_EQ(cudaFreeHost(d), cudaErrorInvalidValue);
  EXPECT_EQ(cudaFree(d), cudaSuccess);
  EXPECT_EQ(cudaFree(d), cudaErrorInvalidValue);  // twice
  cudaGetLastError();
}

}  // namespace
