// Elementwise loops for the neural-network functions (activations, dropout,
// losses): split over cpu::parallel_for when the array is large, with an
// inner loop simple enough for the compiler to vectorize.
#pragma once

#include "backend/cpu/parallel.h"
#include "backend/cpu/vector_math.h"
#include "ops/op_util.h"

namespace chainerc::ops {

// out[i] = f(a[i]) for i in [0, n). Each chunk works on a private copy of f
// and restrict pointers: the captures (a slope, a scale) then cannot alias
// `out`, stay in registers, and the loop vectorizes.
template <typename T, typename F>
void par_map(const T* a, T* out, int64_t n, F f) {
  cpu::parallel_for(n, cpu::kElementwiseGrain, [&](int64_t b, int64_t e) {
    const F g = f;
    const T* __restrict pa = a;
    T* __restrict po = out;
    for (int64_t i = b; i < e; ++i) po[i] = g(pa[i]);
  });
}

// out[i] = f(a[i], b[i]) for i in [0, n).
template <typename T, typename F>
void par_map2(const T* a, const T* b, T* out, int64_t n, F f) {
  cpu::parallel_for(n, cpu::kElementwiseGrain, [&](int64_t s, int64_t e) {
    const F g = f;
    const T* __restrict pa = a;
    const T* __restrict pb = b;
    T* __restrict po = out;
    for (int64_t i = s; i < e; ++i) po[i] = g(pa[i], pb[i]);
  });
}

// y = f(x) elementwise for a float array (a new array of x's shape).
template <typename F>
Array par_unary(const char* who, const Array& x, F f) {
  check_float(who, x);
  Array y = Array::empty_like(x);
  dispatch_floating(x.dtype(), who, [&](auto t) {
    using T = decltype(t);
    par_map(x.data<T>(), y.data<T>(), x.size(), [f](T v) { return f(v); });
  });
  return y;
}

// out = f(a, b) elementwise for same-shaped float arrays (a new array).
template <typename F>
Array par_binary(const char* who, const Array& a, const Array& b, F f) {
  Array y = Array::empty_like(a);
  dispatch_floating(a.dtype(), who, [&](auto t) {
    using T = decltype(t);
    par_map2(a.data<T>(), b.data<T>(), y.data<T>(), a.size(), [f](T u, T v) { return f(u, v); });
  });
  return y;
}

// y = f(x) for a float array through one of the cpu::vector_* functions
// (vector_exp, vector_tanh, ...), on chunks spread over the thread pool.
// `f` is called as f(const T* x, T* y, int64_t n) for T = float and double.
template <typename F>
Array par_vector_unary(const char* who, const Array& x, F f) {
  check_float(who, x);
  Array y = Array::empty_like(x);
  dispatch_floating(x.dtype(), who, [&](auto t) {
    using T = decltype(t);
    const T* px = x.data<T>();
    T* py = y.data<T>();
    cpu::parallel_for(x.size(), cpu::kElementwiseGrain,
                      [&](int64_t b, int64_t e) { f(px + b, py + b, e - b); });
  });
  return y;
}

}  // namespace chainerc::ops
