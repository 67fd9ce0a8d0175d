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
#include <initializer_list>
#include <type_traits>

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

// ---- Vectorised access

// V consecutive elements of T moved by one load or store: 16 bytes
// (float4, double2) where every pointer of a launch is 16-byte aligned
// (vector_width), so that a warp moves 512 bytes per instruction; V = 1 is
// the scalar form. The elements past the last whole pack (n % V) are done
// one at a time by the same kernel.
template <typename T, int V>
struct alignas(sizeof(T) * V) Pack {
  T v[V];
};

template <int V, typename T>
__device__ __forceinline__ Pack<T, V> load_pack(const T* p, int64_t k) {
  return reinterpret_cast<const Pack<T, V>*>(p)[k];
}
template <int V, typename T>
__device__ __forceinline__ void store_pack(T* p, int64_t k, const Pack<T, V>& v) {
  reinterpret_cast<Pack<T, V>*>(p)[k] = v;
}

// Elements of T per 16-byte pack.
template <typename T>
constexpr int kPackElements = 16 / sizeof(T) > 0 ? static_cast<int>(16 / sizeof(T)) : 1;

// The pack width of a launch over `pointers`: kPackElements<T> when every
// one is 16-byte aligned, else 1.
template <typename T>
int pack_width(std::initializer_list<const void*> pointers) {
  for (const void* p : pointers)
    if (reinterpret_cast<uintptr_t>(p) % 16 != 0) return 1;
  return kPackElements<T>;
}

// f(std::integral_constant<int, V>{}) with V = pack_width<T>(pointers).
template <typename T, typename F>
void dispatch_vector_width(std::initializer_list<const void*> pointers, F&& f) {
  if (kPackElements < T >> 1 && pack_width<T>(pointers) == kPackElements<T>)
    f(std::integral_constant<int, kPackElements<T>>{});
  else
    f(std::integral_constant<int, 1>{});
}

// A functor too heavy for a pack says so for an element type T:
// `template <typename T> static constexpr bool one_at_a_time = ...;` (its V
// inlined copies would need more registers than ptxas_budget allows).
template <typename F, typename T, typename = void>
struct OneAtATime : std::false_type {};
template <typename F, typename T>
struct OneAtATime<F, T, std::void_t<decltype(F::template one_at_a_time<T>)>>
    : std::bool_constant<F::template one_at_a_time<T>> {};

// dispatch_vector_width for the map kernels of functor F: one element at a
// time where F asks for it.
template <typename F, typename T, typename G>
void dispatch_vector_width_for(std::initializer_list<const void*> pointers, G&& g) {
  if constexpr (OneAtATime<F, T>::value)
    g(std::integral_constant<int, 1>{});
  else
    dispatch_vector_width<T>(pointers, std::forward<G>(g));
}

// Launches `kernel` (a kernel over packs of V elements) for n elements.
template <int V, typename... P, typename... A>
void launch_packed(const char* name, int64_t n, void (*kernel)(P...), A&&... args) {
  if (n <= 0) return;
  check_launch(launch(kernel, blocks_for((n + V - 1) / V), kBlockThreads, 0, nullptr,
                      std::forward<A>(args)...),
               name);
}

// ---- Kernels over the per-element functors, V elements per step

template <typename F, typename T, int V>
__global__ void map_kernel(const T* __restrict__ x, T* __restrict__ y, int64_t n) {
  const F f{};
  const int64_t packs = n / V;
  for (int64_t k = grid_start(); k < packs; k += grid_step()) {
    const Pack<T, V> a = load_pack<V>(x, k);
    Pack<T, V> r;
    CH_UNROLL
    for (int j = 0; j < V; ++j) r.v[j] = f(a.v[j]);
    store_pack<V>(y, k, r);
  }
  for (int64_t i = packs * V + grid_start(); i < n; i += grid_step()) y[i] = f(x[i]);
}
template <typename F, typename T, int V>
__global__ void map_scalar_kernel(const T* __restrict__ x, T s, T* __restrict__ y, int64_t n) {
  const F f{};
  const int64_t packs = n / V;
  for (int64_t k = grid_start(); k < packs; k += grid_step()) {
    const Pack<T, V> a = load_pack<V>(x, k);
    Pack<T, V> r;
    CH_UNROLL
    for (int j = 0; j < V; ++j) r.v[j] = f(a.v[j], s);
    store_pack<V>(y, k, r);
  }
  for (int64_t i = packs * V + grid_start(); i < n; i += grid_step()) y[i] = f(x[i], s);
}
template <typename F, typename T, int V>
__global__ void map2_kernel(const T* __restrict__ a, const T* __restrict__ b, T* __restrict__ y,
                            int64_t n) {
  const F f{};
  const int64_t packs = n / V;
  for (int64_t k = grid_start(); k < packs; k += grid_step()) {
    const Pack<T, V> pa = load_pack<V>(a, k), pb = load_pack<V>(b, k);
    Pack<T, V> r;
    CH_UNROLL
    for (int j = 0; j < V; ++j) r.v[j] = f(pa.v[j], pb.v[j]);
    store_pack<V>(y, k, r);
  }
  for (int64_t i = packs * V + grid_start(); i < n; i += grid_step()) y[i] = f(a[i], b[i]);
}
// y is a (a backward writing gx over gy, see Array::unshared): one pointer
// where map2_kernel has two restricted ones.
template <typename F, typename T, int V>
__global__ void map2_in_place_kernel(T* a, const T* __restrict__ b, int64_t n) {
  const F f{};
  const int64_t packs = n / V;
  for (int64_t k = grid_start(); k < packs; k += grid_step()) {
    Pack<T, V> pa = load_pack<V>(a, k);
    const Pack<T, V> pb = load_pack<V>(b, k);
    CH_UNROLL
    for (int j = 0; j < V; ++j) pa.v[j] = f(pa.v[j], pb.v[j]);
    store_pack<V>(a, k, pa);
  }
  for (int64_t i = packs * V + grid_start(); i < n; i += grid_step()) a[i] = f(a[i], b[i]);
}
template <typename F, typename T, int V>
__global__ void map2_scalar_in_place_kernel(T* a, const T* __restrict__ b, T s, int64_t n) {
  const F f{};
  const int64_t packs = n / V;
  for (int64_t k = grid_start(); k < packs; k += grid_step()) {
    Pack<T, V> pa = load_pack<V>(a, k);
    const Pack<T, V> pb = load_pack<V>(b, k);
    CH_UNROLL
    for (int j = 0; j < V; ++j) pa.v[j] = f(pa.v[j], pb.v[j], s);
    store_pack<V>(a, k, pa);
  }
  for (int64_t i = packs * V + grid_start(); i < n; i += grid_step()) a[i] = f(a[i], b[i], s);
}
template <typename F, typename T, int V>
__global__ void map2_scalar_kernel(const T* __restrict__ a, const T* __restrict__ b, T s,
                                   T* __restrict__ y, int64_t n) {
  const F f{};
  const int64_t packs = n / V;
  for (int64_t k = grid_start(); k < packs; k += grid_step()) {
    const Pack<T, V> pa = load_pack<V>(a, k), pb = load_pack<V>(b, k);
    Pack<T, V> r;
    CH_UNROLL
    for (int j = 0; j < V; ++j) r.v[j] = f(pa.v[j], pb.v[j], s);
    store_pack<V>(y, k, r);
  }
  for (int64_t i = packs * V + grid_start(); i < n; i += grid_step()) y[i] = f(a[i], b[i], s);
}

// The host side of the map kernels on raw pointers (n elements, contiguous):
// the pack width from the pointers' alignment.
template <typename F, typename T>
void map(const char* name, const T* x, T* y, int64_t n) {
  dispatch_vector_width_for<F, T>({x, y}, [&](auto v) {
    constexpr int V = decltype(v)::value;
    launch_packed<V>(name, n, map_kernel<F, T, V>, x, y, n);
  });
}
template <typename F, typename T>
void map_scalar(const char* name, const T* x, T s, T* y, int64_t n) {
  dispatch_vector_width_for<F, T>({x, y}, [&](auto v) {
    constexpr int V = decltype(v)::value;
    launch_packed<V>(name, n, map_scalar_kernel<F, T, V>, x, s, y, n);
  });
}
// y may be a (not b).
template <typename F, typename T>
void map2(const char* name, const T* a, const T* b, T* y, int64_t n) {
  dispatch_vector_width_for<F, T>({a, b, y}, [&](auto v) {
    constexpr int V = decltype(v)::value;
    if (y == a)
      launch_packed<V>(name, n, map2_in_place_kernel<F, T, V>, y, b, n);
    else
      launch_packed<V>(name, n, map2_kernel<F, T, V>, a, b, y, n);
  });
}
template <typename F, typename T>
void map2_scalar(const char* name, const T* a, const T* b, T s, T* y, int64_t n) {
  dispatch_vector_width_for<F, T>({a, b, y}, [&](auto v) {
    constexpr int V = decltype(v)::value;
    if (y == a)
      launch_packed<V>(name, n, map2_scalar_in_place_kernel<F, T, V>, y, b, s, n);
    else
      launch_packed<V>(name, n, map2_scalar_kernel<F, T, V>, a, b, s, y, n);
  });
}

// y = F(x), x and y of one shape and float dtype on one device.
template <typename F>
void unary_kernel(const Array& x, Array& y) {
  DeviceGuard guard(x.device().index);
  dispatch_floating(x.dtype(), "CUDA unary kernel", [&](auto t) {
    using T = decltype(t);
    map<F, T>("CUDA unary kernel", x.data<T>(), y.data<T>(), x.size());
  });
}
// y = F(x, s), s converted to the dtype.
template <typename F>
void unary_scalar_kernel(const Array& x, double s, Array& y) {
  DeviceGuard guard(x.device().index);
  dispatch_floating(x.dtype(), "CUDA unary kernel", [&](auto t) {
    using T = decltype(t);
    map_scalar<F, T>("CUDA unary kernel", x.data<T>(), static_cast<T>(s), y.data<T>(), x.size());
  });
}
// y = F(a, b), all of one shape; y may be a (not b).
template <typename F>
void binary_kernel(const Array& a, const Array& b, Array& y) {
  DeviceGuard guard(a.device().index);
  dispatch_floating(a.dtype(), "CUDA binary kernel", [&](auto t) {
    using T = decltype(t);
    T* out = y.data<T>();
    // y shares memory with a exactly when it is a (Array::unshared).
    map2<F, T>("CUDA binary kernel", y.shares_memory_with(a) ? out : a.data<T>(), b.data<T>(), out,
               a.size());
  });
}
// y = F(a, b, s); y may be a (not b).
template <typename F>
void binary_scalar_kernel(const Array& a, const Array& b, double s, Array& y) {
  DeviceGuard guard(a.device().index);
  dispatch_floating(a.dtype(), "CUDA binary kernel", [&](auto t) {
    using T = decltype(t);
    T* out = y.data<T>();
    map2_scalar<F, T>("CUDA binary kernel", y.shares_memory_with(a) ? out : a.data<T>(),
                      b.data<T>(), static_cast<T>(s), out, a.size());
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
