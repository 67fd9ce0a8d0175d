#include "vector_math.h"

#include <algorithm>
#include <cmath>

// CH_NO_TARGET_CLONES (ThreadSanitizer builds): IFUNC resolvers run before its runtime.
#if CH_HAVE_LIBMVEC && !defined(CH_NO_TARGET_CLONES)
// glibc declares these SIMD variants only under -ffast-math (which would also
// drop NaN and infinity semantics). Declaring them here lets the vectoriser
// call libmvec's _ZGV* functions from loops over exp/log/tanh with exact IEEE
// semantics everywhere else. Clang ignores the attribute (with a warning):
// its builds (the fuzzers) call the scalar functions.
#ifndef __clang__
extern "C" {
__attribute__((simd("notinbranch"))) float expf(float) noexcept;
__attribute__((simd("notinbranch"))) double exp(double) noexcept;
__attribute__((simd("notinbranch"))) float logf(float) noexcept;
__attribute__((simd("notinbranch"))) double log(double) noexcept;
__attribute__((simd("notinbranch"))) float tanhf(float) noexcept;
__attribute__((simd("notinbranch"))) double tanh(double) noexcept;
}
#endif
// One copy of each loop per ISA; the dynamic loader picks the best at start-up.
#define CH_VECTOR_CLONES \
  __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define CH_VECTOR_CLONES
#endif

namespace chainerc::cpu {
namespace {

// y = f(x) in blocks through a stack buffer: the inner loop's pointers never
// alias, so it vectorises even when the caller passes x == y.
constexpr int64_t kBlock = 256;

#define CH_DEFINE_VECTOR_FUNCTION(NAME, T, EXPR)            \
  CH_VECTOR_CLONES void NAME(const T* x, T* y, int64_t n) { \
    T buffer[kBlock];                                       \
    for (int64_t b = 0; b < n; b += kBlock) {               \
      const int64_t m = std::min(kBlock, n - b);            \
      const T* __restrict in = x + b;                       \
      T* __restrict tmp = buffer;                           \
      for (int64_t i = 0; i < m; ++i) {                     \
        const T v = in[i];                                  \
        tmp[i] = (EXPR);                                    \
      }                                                     \
      std::copy(buffer, buffer + m, y + b);                 \
    }                                                       \
  }

CH_DEFINE_VECTOR_FUNCTION(exp_f32, float, expf(v))
CH_DEFINE_VECTOR_FUNCTION(exp_f64, double, exp(v))
CH_DEFINE_VECTOR_FUNCTION(log_f32, float, logf(v))
CH_DEFINE_VECTOR_FUNCTION(log_f64, double, log(v))
CH_DEFINE_VECTOR_FUNCTION(tanh_f32, float, tanhf(v))
CH_DEFINE_VECTOR_FUNCTION(tanh_f64, double, tanh(v))
CH_DEFINE_VECTOR_FUNCTION(sigmoid_f32, float, 1.0f / (1.0f + expf(-v)))
CH_DEFINE_VECTOR_FUNCTION(sigmoid_f64, double, 1.0 / (1.0 + exp(-v)))

#undef CH_DEFINE_VECTOR_FUNCTION

constexpr int kLanes = 16;

template <typename T>
inline T sum_impl(const T* __restrict x, int64_t n) {
  T lanes[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int l = 0; l < kLanes; ++l) lanes[l] += x[i + l];
  T acc = 0;
  for (; i < n; ++i) acc += x[i];
  for (T v : lanes) acc += v;
  return acc;
}

template <typename T>
inline T dot_impl(const T* __restrict x, const T* __restrict y, int64_t n) {
  T lanes[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int l = 0; l < kLanes; ++l) lanes[l] += x[i + l] * y[i + l];
  T acc = 0;
  for (; i < n; ++i) acc += x[i] * y[i];
  for (T v : lanes) acc += v;
  return acc;
}

template <typename T>
inline T squared_deviation_sum_impl(const T* __restrict x, int64_t n, T mean) {
  T lanes[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int l = 0; l < kLanes; ++l) lanes[l] += (x[i + l] - mean) * (x[i + l] - mean);
  T acc = 0;
  for (; i < n; ++i) acc += (x[i] - mean) * (x[i] - mean);
  for (T v : lanes) acc += v;
  return acc;
}

template <typename T>
inline T max_impl(const T* __restrict x, int64_t n) {
  T lanes[kLanes];
  for (T& v : lanes) v = x[0];
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int l = 0; l < kLanes; ++l) lanes[l] = lanes[l] < x[i + l] ? x[i + l] : lanes[l];
  T acc = x[0];
  for (; i < n; ++i) acc = acc < x[i] ? x[i] : acc;
  for (T v : lanes) acc = acc < v ? v : acc;
  return acc;
}

CH_VECTOR_CLONES float sum_f32(const float* x, int64_t n) { return sum_impl(x, n); }
CH_VECTOR_CLONES double sum_f64(const double* x, int64_t n) { return sum_impl(x, n); }
CH_VECTOR_CLONES float dot_f32(const float* x, const float* y, int64_t n) {
  return dot_impl(x, y, n);
}
CH_VECTOR_CLONES double dot_f64(const double* x, const double* y, int64_t n) {
  return dot_impl(x, y, n);
}
CH_VECTOR_CLONES float squared_deviation_sum_f32(const float* x, int64_t n, float mean) {
  return squared_deviation_sum_impl(x, n, mean);
}
CH_VECTOR_CLONES double squared_deviation_sum_f64(const double* x, int64_t n, double mean) {
  return squared_deviation_sum_impl(x, n, mean);
}
CH_VECTOR_CLONES float max_f32(const float* x, int64_t n) { return max_impl(x, n); }
CH_VECTOR_CLONES double max_f64(const double* x, int64_t n) { return max_impl(x, n); }

}  // namespace

void vector_exp(const float* x, float* y, int64_t n) { exp_f32(x, y, n); }
void vector_exp(const double* x, double* y, int64_t n) { exp_f64(x, y, n); }
void vector_log(const float* x, float* y, int64_t n) { log_f32(x, y, n); }
void vector_log(const double* x, double* y, int64_t n) { log_f64(x, y, n); }
void vector_tanh(const float* x, float* y, int64_t n) { tanh_f32(x, y, n); }
void vector_tanh(const double* x, double* y, int64_t n) { tanh_f64(x, y, n); }
void vector_sigmoid(const float* x, float* y, int64_t n) { sigmoid_f32(x, y, n); }
void vector_sigmoid(const double* x, double* y, int64_t n) { sigmoid_f64(x, y, n); }

float vector_sum(const float* x, int64_t n) { return sum_f32(x, n); }
double vector_sum(const double* x, int64_t n) { return sum_f64(x, n); }
float vector_dot(const float* x, const float* y, int64_t n) { return dot_f32(x, y, n); }
double vector_dot(const double* x, const double* y, int64_t n) { return dot_f64(x, y, n); }
float vector_squared_deviation_sum(const float* x, int64_t n, float mean) {
  return squared_deviation_sum_f32(x, n, mean);
}
double vector_squared_deviation_sum(const double* x, int64_t n, double mean) {
  return squared_deviation_sum_f64(x, n, mean);
}
float vector_max(const float* x, int64_t n) { return max_f32(x, n); }
double vector_max(const double* x, int64_t n) { return max_f64(x, n); }

}  // namespace chainerc::cpu
