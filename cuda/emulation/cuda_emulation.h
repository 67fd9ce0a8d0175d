// The CUDA device language on the CPU (-Dcuda-emulation=true): included by
// the emulated <cuda_runtime.h>, so the project's .cu sources compile with
// the host C++ compiler and their kernels run on the CPU
// (cuda/emulation/emulator.cpp):
//
// - every CUDA thread is a fiber; __syncthreads() is a barrier of the block's
//   fibers, which are resumed in a shuffled order after each barrier, so code
//   that misses a barrier reads stale shared memory; a barrier that only part
//   of the block reaches (others exited or wait at another __syncthreads) is
//   reported as a launch error;
// - threadIdx, blockIdx, blockDim, gridDim in 3-D; `__shared__` variables
//   are per block (blocks of a launch run one after another on the launching
//   thread); dynamic shared memory through CH_EXTERN_SHARED(T, name), filled
//   with 0xff bytes (NaN for floats) before each block;
// - warp shuffles and votes over 32-lane warps (a lane named in the mask
//   that has exited is an error); atomics; CUDA's overload set of min/max
//   (max(float, int) is ambiguous here as under nvcc);
// - launches go through chainerc::cuda::launch (cuda/runtime/launch.h),
//   which checks an H100's launch limits.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <tuple>
#include <type_traits>
#include <utility>

#include "include/cuda_runtime_api.h"

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline __attribute__((always_inline))
// __noinline__ is left undefined: libstdc++ spells its own attribute
// __attribute__((__noinline__)), which such a macro would break in every
// standard header included after this one (nvcc treats it specially).
#define __launch_bounds__(...)
#define __align__(n) alignas(n)
// Per block: blocks of a launch run one at a time on the launching thread.
#define __shared__ static thread_local
#define __constant__ static

// Dynamic shared memory (the launch's shmem bytes), as `extern __shared__`.
#define CH_EXTERN_SHARED(T, name) \
  T* name = reinterpret_cast<T*>(::chainerc::cuda::emu::dynamic_shared())

namespace chainerc::cuda::emu {

struct FiberState {
  uint3 thread_idx;
};
struct BlockState {
  uint3 block_idx{0, 0, 0};
  dim3 block_dim;
  dim3 grid_dim;
};
extern thread_local FiberState* t_fiber;
extern thread_local BlockState t_block;

enum WarpOp { kShfl, kShflUp, kShflDown, kShflXor, kAll, kAny, kBallot, kSyncWarp };

void syncthreads(const char* file, int line);
uint64_t warp_collective(WarpOp op, unsigned mask, uint64_t value, int arg, int width);
unsigned active_mask();
[[noreturn]] void trap(const char* why);
unsigned char* dynamic_shared();

// cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize).
void set_max_dynamic_shared(const void* kernel, size_t bytes);
// Runs body(ctx) as every thread of the grid. Checks the launch limits
// (`kernel` identifies the kernel for its cudaFuncSetAttribute settings).
cudaError_t launch_grid(dim3 grid, dim3 block, size_t shared_bytes, cudaStream_t stream,
                        void (*body)(void*), void* ctx, const void* kernel);
// The same for a kernel without attributes (user kernels' table,
// user_kernel_abi.h). Both run the grid before they return (after the
// stream's earlier work); refused on a stream being captured.
cudaError_t launch_grid(dim3 grid, dim3 block, size_t shared_bytes, cudaStream_t stream,
                        void (*body)(void*), void* ctx);
// A launch that owns its body (launch.h): queued on `stream` as a GPU queues
// it (run at once where nothing on the stream waits, else when the stream's
// earlier work and the events it waits for are done; recorded when the
// stream is being captured into a graph).
cudaError_t launch_grid_owned(dim3 grid, dim3 block, size_t shared_bytes, cudaStream_t stream,
                              std::function<void()> body, const void* kernel);
// The emulated streams (runtime.cpp): queue `work` on `stream` (null: the
// legacy default stream of the current device) as above; its error is the
// call's when it runs at once, else the stream's next synchronisation's.
cudaError_t submit(cudaStream_t stream, std::function<cudaError_t()> work);
// Run `work` now, after everything queued on `stream` before it.
cudaError_t run_on_stream_now(cudaStream_t stream, const std::function<cudaError_t()>& work);

template <typename T>
uint64_t to_bits(T v) {
  static_assert(std::is_arithmetic<T>::value && (sizeof(T) == 4 || sizeof(T) == 8),
                "warp shuffles take 32- and 64-bit arithmetic values");
  uint64_t b = 0;
  std::memcpy(&b, &v, sizeof(T));
  return b;
}
template <typename T>
T from_bits(uint64_t b) {
  T v;
  std::memcpy(&v, &b, sizeof(T));
  return v;
}

}  // namespace chainerc::cuda::emu

#if defined(CH_EMU_USER_KERNEL)
// A user kernel compiled at run time into its own shared object
// (user_kernel_dso.h): libchainerc's thread state is hidden, so the object
// reaches it through pointers the launching thread hands over at each launch.
namespace chainerc::cuda::emu {
extern thread_local FiberState* const* uk_fiber;
extern thread_local BlockState* uk_block;
}  // namespace chainerc::cuda::emu
#define threadIdx ((*::chainerc::cuda::emu::uk_fiber)->thread_idx)
#define blockIdx (::chainerc::cuda::emu::uk_block->block_idx)
#define blockDim (::chainerc::cuda::emu::uk_block->block_dim)
#define gridDim (::chainerc::cuda::emu::uk_block->grid_dim)
#else
#define threadIdx (::chainerc::cuda::emu::t_fiber->thread_idx)
#define blockIdx (::chainerc::cuda::emu::t_block.block_idx)
#define blockDim (::chainerc::cuda::emu::t_block.block_dim)
#define gridDim (::chainerc::cuda::emu::t_block.grid_dim)
#endif
static constexpr int warpSize = 32;

#define __syncthreads() ::chainerc::cuda::emu::syncthreads(__FILE__, __LINE__)
inline void __syncwarp(unsigned mask = 0xffffffffu) {
  ::chainerc::cuda::emu::warp_collective(::chainerc::cuda::emu::kSyncWarp, mask, 0, 0, 32);
}
inline unsigned __activemask() { return ::chainerc::cuda::emu::active_mask(); }
inline void __trap() { ::chainerc::cuda::emu::trap("__trap()"); }

// Warp shuffles.
template <typename T>
T __shfl_sync(unsigned mask, T var, int src_lane, int width = 32) {
  namespace e = ::chainerc::cuda::emu;
  return e::from_bits<T>(e::warp_collective(e::kShfl, mask, e::to_bits(var), src_lane, width));
}
template <typename T>
T __shfl_up_sync(unsigned mask, T var, unsigned delta, int width = 32) {
  namespace e = ::chainerc::cuda::emu;
  return e::from_bits<T>(
      e::warp_collective(e::kShflUp, mask, e::to_bits(var), static_cast<int>(delta), width));
}
template <typename T>
T __shfl_down_sync(unsigned mask, T var, unsigned delta, int width = 32) {
  namespace e = ::chainerc::cuda::emu;
  return e::from_bits<T>(
      e::warp_collective(e::kShflDown, mask, e::to_bits(var), static_cast<int>(delta), width));
}
template <typename T>
T __shfl_xor_sync(unsigned mask, T var, int lane_mask, int width = 32) {
  namespace e = ::chainerc::cuda::emu;
  return e::from_bits<T>(e::warp_collective(e::kShflXor, mask, e::to_bits(var), lane_mask, width));
}
// Votes.
inline int __all_sync(unsigned mask, int pred) {
  namespace e = ::chainerc::cuda::emu;
  return static_cast<int>(e::warp_collective(e::kAll, mask, pred != 0, 0, 32));
}
inline int __any_sync(unsigned mask, int pred) {
  namespace e = ::chainerc::cuda::emu;
  return static_cast<int>(e::warp_collective(e::kAny, mask, pred != 0, 0, 32));
}
inline unsigned __ballot_sync(unsigned mask, int pred) {
  namespace e = ::chainerc::cuda::emu;
  return static_cast<unsigned>(e::warp_collective(e::kBallot, mask, pred != 0, 0, 32));
}

// Atomics (device-wide; also safe between host threads).
namespace chainerc::cuda::emu {
template <typename T, typename F>
T atomic_update(T* address, F f) {
  T old = __atomic_load_n(address, __ATOMIC_RELAXED);
  while (!__atomic_compare_exchange_n(address, &old, f(old), false, __ATOMIC_SEQ_CST,
                                      __ATOMIC_RELAXED)) {
  }
  return old;
}
template <typename T, typename B>
T atomic_float_update(T* address, T (*f)(T, T), T val) {
  static_assert(sizeof(T) == sizeof(B), "bits");
  B* a = reinterpret_cast<B*>(address);
  B old = __atomic_load_n(a, __ATOMIC_RELAXED);
  for (;;) {
    T o = from_bits<T>(old);
    B n = static_cast<B>(to_bits<T>(f(o, val)));
    if (__atomic_compare_exchange_n(a, &old, n, false, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED))
      return o;
  }
}
}  // namespace chainerc::cuda::emu

#define CH_EMU_INT_ATOMICS(T)                                                               \
  inline T atomicAdd(T* a, T v) { return __atomic_fetch_add(a, v, __ATOMIC_SEQ_CST); }      \
  inline T atomicSub(T* a, T v) { return __atomic_fetch_sub(a, v, __ATOMIC_SEQ_CST); }      \
  inline T atomicExch(T* a, T v) { return __atomic_exchange_n(a, v, __ATOMIC_SEQ_CST); }    \
  inline T atomicAnd(T* a, T v) { return __atomic_fetch_and(a, v, __ATOMIC_SEQ_CST); }      \
  inline T atomicOr(T* a, T v) { return __atomic_fetch_or(a, v, __ATOMIC_SEQ_CST); }        \
  inline T atomicXor(T* a, T v) { return __atomic_fetch_xor(a, v, __ATOMIC_SEQ_CST); }      \
  inline T atomicMax(T* a, T v) {                                                           \
    return ::chainerc::cuda::emu::atomic_update(a, [v](T o) { return o < v ? v : o; });     \
  }                                                                                         \
  inline T atomicMin(T* a, T v) {                                                           \
    return ::chainerc::cuda::emu::atomic_update(a, [v](T o) { return v < o ? v : o; });     \
  }                                                                                         \
  inline T atomicCAS(T* a, T compare, T v) {                                                \
    __atomic_compare_exchange_n(a, &compare, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST); \
    return compare;                                                                         \
  }
CH_EMU_INT_ATOMICS(int)
CH_EMU_INT_ATOMICS(unsigned int)
CH_EMU_INT_ATOMICS(unsigned long long int)
#undef CH_EMU_INT_ATOMICS
inline long long int atomicMax(long long int* a, long long int v) {
  return ::chainerc::cuda::emu::atomic_update(a, [v](long long o) { return o < v ? v : o; });
}
inline long long int atomicMin(long long int* a, long long int v) {
  return ::chainerc::cuda::emu::atomic_update(a, [v](long long o) { return v < o ? v : o; });
}
inline float atomicAdd(float* a, float v) {
  return ::chainerc::cuda::emu::atomic_float_update<float, uint32_t>(
      a, [](float x, float y) { return x + y; }, v);
}
inline double atomicAdd(double* a, double v) {
  return ::chainerc::cuda::emu::atomic_float_update<double, uint64_t>(
      a, [](double x, double y) { return x + y; }, v);
}
inline float atomicExch(float* a, float v) {
  return ::chainerc::cuda::emu::atomic_float_update<float, uint32_t>(
      a, [](float, float y) { return y; }, v);
}

// Bit and reinterpretation intrinsics.
inline int __float_as_int(float x) {
  return ::chainerc::cuda::emu::from_bits<int>(::chainerc::cuda::emu::to_bits(x));
}
inline float __int_as_float(int x) {
  return ::chainerc::cuda::emu::from_bits<float>(::chainerc::cuda::emu::to_bits(x));
}
inline unsigned __float_as_uint(float x) {
  return ::chainerc::cuda::emu::from_bits<unsigned>(::chainerc::cuda::emu::to_bits(x));
}
inline float __uint_as_float(unsigned x) {
  return ::chainerc::cuda::emu::from_bits<float>(::chainerc::cuda::emu::to_bits(x));
}
inline long long __double_as_longlong(double x) {
  return ::chainerc::cuda::emu::from_bits<long long>(::chainerc::cuda::emu::to_bits(x));
}
inline double __longlong_as_double(long long x) {
  return ::chainerc::cuda::emu::from_bits<double>(::chainerc::cuda::emu::to_bits(x));
}
inline int __popc(unsigned x) { return __builtin_popcount(x); }
inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
inline int __clz(int x) { return x == 0 ? 32 : __builtin_clz(static_cast<unsigned>(x)); }
inline int __ffs(int x) { return __builtin_ffs(x); }
template <typename T>
T __ldg(const T* p) {
  return *p;
}

// CUDA's math functions beyond the C library's (the C and C++ library's
// float overloads, sqrt(float) and the like, are CUDA's too).
inline float rsqrtf(float x) { return 1.0f / std::sqrt(x); }
inline double rsqrt(double x) { return 1.0 / std::sqrt(x); }
inline float __expf(float x) { return std::exp(x); }
inline float __logf(float x) { return std::log(x); }
inline float __fdividef(float x, float y) { return x / y; }
inline float __saturatef(float x) { return x < 0.0f ? 0.0f : (x > 1.0f ? 1.0f : x); }

// min and max: exactly CUDA's overload set (crt/math_functions.hpp), so a
// call nvcc finds ambiguous (max(float, int), min(int64_t, int)) does not
// compile here either.
#define CH_EMU_MINMAX(R, A, B)                                                            \
  inline R min(A a, B b) {                                                                \
    return static_cast<R>(a) < static_cast<R>(b) ? static_cast<R>(a) : static_cast<R>(b); \
  }                                                                                       \
  inline R max(A a, B b) {                                                                \
    return static_cast<R>(a) > static_cast<R>(b) ? static_cast<R>(a) : static_cast<R>(b); \
  }
CH_EMU_MINMAX(int, int, int)
CH_EMU_MINMAX(unsigned int, unsigned int, unsigned int)
CH_EMU_MINMAX(unsigned int, int, unsigned int)
CH_EMU_MINMAX(unsigned int, unsigned int, int)
CH_EMU_MINMAX(long int, long int, long int)
CH_EMU_MINMAX(unsigned long int, unsigned long int, unsigned long int)
CH_EMU_MINMAX(unsigned long int, long int, unsigned long int)
CH_EMU_MINMAX(unsigned long int, unsigned long int, long int)
CH_EMU_MINMAX(long long int, long long int, long long int)
CH_EMU_MINMAX(unsigned long long int, unsigned long long int, unsigned long long int)
CH_EMU_MINMAX(unsigned long long int, long long int, unsigned long long int)
CH_EMU_MINMAX(unsigned long long int, unsigned long long int, long long int)
CH_EMU_MINMAX(float, float, float)
CH_EMU_MINMAX(double, double, double)
CH_EMU_MINMAX(double, float, double)
CH_EMU_MINMAX(double, double, float)
#undef CH_EMU_MINMAX
inline unsigned int umin(unsigned int a, unsigned int b) { return a < b ? a : b; }
inline unsigned int umax(unsigned int a, unsigned int b) { return a > b ? a : b; }
inline long long int llmin(long long int a, long long int b) { return a < b ? a : b; }
inline long long int llmax(long long int a, long long int b) { return a > b ? a : b; }
inline unsigned long long int ullmin(unsigned long long int a, unsigned long long int b) {
  return a < b ? a : b;
}
inline unsigned long long int ullmax(unsigned long long int a, unsigned long long int b) {
  return a > b ? a : b;
}
