// What the CUDA op kernels share: the launch geometry of element-wise work,
// the launch check, and CUDA kernels over the per-element functors of
// src/kernels/pointwise/ (unary, binary, with a scalar, with NumPy
// broadcasting), whose host wrappers are kernel implementations as they are:
//
//   kernels::relu.set(CH_DEVICE_CUDA, cuda::unary_kernel<pointwise::Relu>);
//
// The engine's work runs on each device's default stream; a host wrapper
// makes the arrays' device current and launches through cuda::launch.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "core/array.h"
#include "core/dtype.h"
#include "cuda/ops/index.cuh"
#include "cuda/runtime/cuda_util.h"
#include "cuda/runtime/launch.h"

namespace chainerc::cuda {

constexpr int kBlockThreads = 256;

// Blocks for n elements of grid-stride work. On a GPU enough to fill it (the
// loops stride beyond that); under the emulator, where every CUDA thread is a
// fiber, a few blocks, so that large arrays run in reasonable time and the
// grid-stride path is what the tests exercise.
inline unsigned blocks_for(int64_t n, int threads = kBlockThreads) {
#if defined(CH_CUDA_EMULATED_RUNTIME)
  constexpr int64_t kMaxBlocks = 8;
#else
  constexpr int64_t kMaxBlocks = int64_t{65535} * 8;
#endif
  int64_t b = (n + threads - 1) / threads;
  if (b < 1) b = 1;
  return static_cast<unsigned>(b < kMaxBlocks ? b : kMaxBlocks);
}

// The first element and the step of a grid-stride loop over a 1-D launch:
//   for (int64_t i = grid_start(); i < n; i += grid_step())
__device__ __forceinline__ int64_t grid_start() {
  return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ __forceinline__ int64_t grid_step() {
  return static_cast<int64_t>(gridDim.x) * blockDim.x;
}

// Throws Error(CH_ERR_DEVICE) naming the kernel unless the launch succeeded.
inline void check_launch(cudaError_t e, const char* kernel) { check(e, kernel, "kernel launch"); }

// Launches `kernel` for n elements of grid-stride work on the default stream
// of the current device.
template <typename... P, typename... A>
void launch_elementwise(const char* name, int64_t n, void (*kernel)(P...), A&&... args) {
  if (n <= 0) return;
  check_launch(launch(kernel, blocks_for(n), kBlockThreads, 0, nullptr, std::forward<A>(args)...),
               name);
}

// ---- Kernels over the per-element functors

template <typename F, typename T>
__global__ void map_kernel(const T* __restrict__ x, T* __restrict__ y, int64_t n) {
  const F f{};
  for (int64_t i = grid_start(); i < n; i += grid_step()) y[i] = f(x[i]);
}
template <typename F, typename T>
__global__ void map_scalar_kernel(const T* __restrict__ x, T s, T* __restrict__ y, int64_t n) {
  const F f{};
  for (int64_t i = grid_start(); i < n; i += grid_step()) y[i] = f(x[i], s);
}
template <typename F, typename T>
__global__ void map2_kernel(const T* __restrict__ a, const T* __restrict__ b, T* __restrict__ y,
                            int64_t n) {
  const F f{};
  for (int64_t i = grid_start(); i < n; i += grid_step()) y[i] = f(a[i], b[i]);
}
// y is a (a backward writing gx over gy, see Array::unshared): one pointer
// where map2_kernel has two restricted ones.
template <typename F, typename T>
__global__ void map2_in_place_kernel(T* a, const T* __restrict__ b, int64_t n) {
  const F f{};
  for (int64_t i = grid_start(); i < n; i += grid_step()) a[i] = f(a[i], b[i]);
}
template <typename F, typename T>
__global__ void map2_scalar_in_place_kernel(T* a, const T* __restrict__ b, T s, int64_t n) {
  const F f{};
  for (int64_t i = grid_start(); i < n; i += grid_step()) a[i] = f(a[i], b[i], s);
}
template <typename F, typename T>
__global__ void map2_scalar_kernel(const T* __restrict__ a, const T* __restrict__ b, T s,
                                   T* __restrict__ y, int64_t n) {
  const F f{};
  for (int64_t i = grid_start(); i < n; i += grid_step()) y[i] = f(a[i], b[i], s);
}

// y = F(x), x and y of one shape and float dtype on one device.
template <typename F>
void unary_kernel(const Array& x, Array& y) {
  DeviceGuard guard(x.device().index);
  dispatch_floating(x.dtype(), "CUDA unary kernel", [&](auto t) {
    using T = decltype(t);
    launch_elementwise("CUDA unary kernel", x.size(), map_kernel<F, T>, x.data<T>(), y.data<T>(),
                       x.size());
  });
}
// y = F(x, s), s converted to the dtype.
template <typename F>
void unary_scalar_kernel(const Array& x, double s, Array& y) {
  DeviceGuard guard(x.device().index);
  dispatch_floating(x.dtype(), "CUDA unary kernel", [&](auto t) {
    using T = decltype(t);
    launch_elementwise("CUDA unary kernel", x.size(), map_scalar_kernel<F, T>, x.data<T>(),
                       static_cast<T>(s), y.data<T>(), x.size());
  });
}
// y = F(a, b), all of one shape; y may be a (not b).
template <typename F>
void binary_kernel(const Array& a, const Array& b, Array& y) {
  DeviceGuard guard(a.device().index);
  dispatch_floating(a.dtype(), "CUDA binary kernel", [&](auto t) {
    using T = decltype(t);
    if (y.shares_memory_with(a))
      launch_elementwise("CUDA binary kernel", a.size(), map2_in_place_kernel<F, T>, y.data<T>(),
                         b.data<T>(), a.size());
    else
      launch_elementwise("CUDA binary kernel", a.size(), map2_kernel<F, T>, a.data<T>(),
                         b.data<T>(), y.data<T>(), a.size());
  });
}
// y = F(a, b, s); y may be a (not b).
template <typename F>
void binary_scalar_kernel(const Array& a, const Array& b, double s, Array& y) {
  DeviceGuard guard(a.device().index);
  dispatch_floating(a.dtype(), "CUDA binary kernel", [&](auto t) {
    using T = decltype(t);
    if (y.shares_memory_with(a))
      launch_elementwise("CUDA binary kernel", a.size(), map2_scalar_in_place_kernel<F, T>,
                         y.data<T>(), b.data<T>(), static_cast<T>(s), a.size());
    else
      launch_elementwise("CUDA binary kernel", a.size(), map2_scalar_kernel<F, T>, a.data<T>(),
                         b.data<T>(), static_cast<T>(s), y.data<T>(), a.size());
  });
}

// ---- NumPy broadcasting

// Operand x's strides (in elements) over the axes of result shape y, x
// aligned to the right: 0 along an axis x is broadcast over (x broadcastable
// to y, checked by the op).
inline void broadcast_strides(const Shape& x, const Shape& y, int64_t* stride) {
  const int32_t lead = y.ndim() - x.ndim();
  int64_t s = 1;
  for (int32_t d = y.ndim() - 1; d >= 0; --d) {
    const int64_t extent = d >= lead ? x[d - lead] : 1;
    stride[d] = extent == 1 ? 0 : s;
    s *= extent;
  }
}

// A grid-stride loop in index type U (uint32_t where the launch's indices
// fit, see cuda/ops/index.cuh): for (U i = grid_start<U>(); i < n; i += grid_step<U>()).
// With n < 2^31 and fewer than 2^31 threads, i + step never wraps.
template <typename U>
__device__ __forceinline__ U grid_start_as() {
  return static_cast<U>(blockIdx.x) * blockDim.x + threadIdx.x;
}
template <typename U>
__device__ __forceinline__ U grid_step_as() {
  return static_cast<U>(gridDim.x) * blockDim.x;
}

template <typename F, typename T, typename U>
__global__ void broadcast_map2_kernel(OffsetCalc<U, 2> oc, const T* __restrict__ a,
                                      const T* __restrict__ b, T* __restrict__ y, U n) {
  const F f{};
  for (U i = grid_start_as<U>(); i < n; i += grid_step_as<U>()) {
    U off[2];
    oc.get(i, off);
    y[i] = f(a[off[0]], b[off[1]]);
  }
}

// y = F(a, b) where y has the broadcast shape of a and b.
template <typename F>
void broadcast_kernel(const Array& a, const Array& b, Array& y) {
  if (a.shape() == y.shape() && b.shape() == y.shape()) return binary_kernel<F>(a, b, y);
  if (y.size() == 0) return;
  DeviceGuard guard(a.device().index);
  int64_t sa[CH_MAX_NDIM], sb[CH_MAX_NDIM];
  broadcast_strides(a.shape(), y.shape(), sa);
  broadcast_strides(b.shape(), y.shape(), sb);
  const int64_t* const strides[2] = {sa, sb};
  dispatch_floating(a.dtype(), "CUDA broadcast kernel", [&](auto t) {
    using T = decltype(t);
    // Offsets stay below the operands' sizes, which are at most y's.
    dispatch_index(y.size(), [&](auto u) {
      using U = decltype(u);
      launch_elementwise("CUDA broadcast kernel", y.size(), broadcast_map2_kernel<F, T, U>,
                         make_offset_calc<U, 2>(y.ndim(), y.shape().data(), strides), a.data<T>(),
                         b.data<T>(), y.data<T>(), static_cast<U>(y.size()));
    });
  });
}

}  // namespace chainerc::cuda
