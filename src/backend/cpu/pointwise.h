// The CPU backend's loops for pointwise kernels: a per-element functor from
// src/kernels/pointwise/ applied over contiguous arrays, split over the thread
// pool when large, with inner loops simple enough to vectorize. Used as
// kernel implementations directly, e.g.
//   kernels::relu.set(CH_DEVICE_CPU, unary_kernel<pointwise::Relu>);
#pragma once

#include "backend/cpu/elementwise.h"
#include "backend/cpu/parallel.h"
#include "backend/cpu/simd_clones.h"
#include "core/array.h"
#include "core/dtype.h"

namespace chainerc::cpu {

// One chunk of par_map / par_map2, one copy per vector ISA (simd_clones.h).
// g is a private copy and the pointers restrict: the captures (a slope, a
// scale) then cannot alias `out`, stay in registers, and the loop vectorizes.
template <typename T, typename F>
CH_SIMD_CLONES void map_chunk(const T* __restrict a, T* __restrict out, int64_t b, int64_t e, F g) {
  for (int64_t i = b; i < e; ++i) out[i] = g(a[i]);
}

template <typename T, typename F>
CH_SIMD_CLONES void map2_chunk(const T* __restrict a, const T* __restrict b, T* __restrict out,
                               int64_t s, int64_t e, F g) {
  for (int64_t i = s; i < e; ++i) out[i] = g(a[i], b[i]);
}

// map_chunk over `a` itself (out is a: relu's forward written over its
// released input, DeferredValue::adoptable_operand).
template <typename T, typename F>
CH_SIMD_CLONES void map_chunk_in_place(T* a, int64_t b, int64_t e, F g) {
  for (int64_t i = b; i < e; ++i) a[i] = g(a[i]);
}

// map2_chunk over `a` itself (out is a: a backward writing gx over gy, see
// Array::unshared), one pointer where the others restrict.
template <typename T, typename F>
CH_SIMD_CLONES void map2_chunk_in_place(T* a, const T* __restrict b, int64_t s, int64_t e, F g) {
  for (int64_t i = s; i < e; ++i) a[i] = g(a[i], b[i]);
}

// out[i] = f(a[i]) for i in [0, n); out may be a.
template <typename T, typename F>
void par_map(const T* a, T* out, int64_t n, F f) {
  if (out == a)
    parallel_for(n, kElementwiseGrain,
                 [&](int64_t b, int64_t e) { map_chunk_in_place(out, b, e, f); });
  else
    parallel_for(n, kElementwiseGrain, [&](int64_t b, int64_t e) { map_chunk(a, out, b, e, f); });
}

// out[i] = f(a[i], b[i]) for i in [0, n); out may be a (not b).
template <typename T, typename F>
void par_map2(const T* a, const T* b, T* out, int64_t n, F f) {
  if (out == a)
    parallel_for(n, kElementwiseGrain,
                 [&](int64_t s, int64_t e) { map2_chunk_in_place(out, b, s, e, f); });
  else
    parallel_for(n, kElementwiseGrain,
                 [&](int64_t s, int64_t e) { map2_chunk(a, b, out, s, e, f); });
}

// y = F(x)
template <typename F>
void unary_kernel(const Array& x, Array& y) {
  dispatch_floating(x.dtype(), "unary kernel", [&](auto t) {
    using T = decltype(t);
    par_map(x.data<T>(), y.data<T>(), x.size(), [](T v) { return F{}(v); });
  });
}

// y = F(x, s)
template <typename F>
void unary_scalar_kernel(const Array& x, double s, Array& y) {
  dispatch_floating(x.dtype(), "unary kernel", [&](auto t) {
    using T = decltype(t);
    par_map(x.data<T>(), y.data<T>(), x.size(), [s = static_cast<T>(s)](T v) { return F{}(v, s); });
  });
}

// y = F(a, b), same shapes
template <typename F>
void binary_kernel(const Array& a, const Array& b, Array& y) {
  dispatch_floating(a.dtype(), "binary kernel", [&](auto t) {
    using T = decltype(t);
    par_map2(a.data<T>(), b.data<T>(), y.data<T>(), a.size(), [](T u, T v) { return F{}(u, v); });
  });
}

// y = F(a, b, s), same shapes
template <typename F>
void binary_scalar_kernel(const Array& a, const Array& b, double s, Array& y) {
  dispatch_floating(a.dtype(), "binary kernel", [&](auto t) {
    using T = decltype(t);
    par_map2(a.data<T>(), b.data<T>(), y.data<T>(), a.size(),
             [s = static_cast<T>(s)](T u, T v) { return F{}(u, v, s); });
  });
}

// y = F(a, b) with NumPy broadcasting (y has the broadcast shape).
template <typename F>
void broadcast_kernel(const Array& a, const Array& b, Array& y) {
  dispatch_floating(a.dtype(), "binary kernel", [&](auto t) {
    using T = decltype(t);
    if (a.shape() == b.shape()) {
      par_map2(a.data<T>(), b.data<T>(), y.data<T>(), y.size(), [](T u, T v) { return F{}(u, v); });
      return;
    }
    binary_broadcast(a.data<T>(), a.shape(), b.data<T>(), b.shape(), y.data<T>(), y.shape(),
                     [](T u, T v) { return F{}(u, v); });
  });
}

}  // namespace chainerc::cpu

namespace chainerc::cpu {

// y = f(x) for a float array through one of the cpu::vector_* functions
// (vector_exp, vector_tanh, ...) on chunks spread over the thread pool; `f`
// is called as f(const T* x, T* y, int64_t n) for T = float and double.
template <typename F>
void vector_map(const Array& x, Array& y, F f) {
  dispatch_floating(x.dtype(), "unary kernel", [&](auto t) {
    using T = decltype(t);
    const T* px = x.data<T>();
    T* py = y.data<T>();
    parallel_for(x.size(), kElementwiseGrain,
                 [&](int64_t b, int64_t e) { f(px + b, py + b, e - b); });
  });
}

}  // namespace chainerc::cpu
