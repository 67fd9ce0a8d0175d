// Exponential, logarithm, tanh and sigmoid over contiguous arrays, vectorised
// through glibc's vector math library (libmvec) with the widest vector ISA the
// CPU has (AVX-512, AVX2 or SSE), chosen once at load time. A scalar libm call
// per element is 8 to 40 times slower on AVX-512 machines.
//
// Each function runs on the calling thread (callers split large arrays with
// parallel_for) and allows x == y. Results are within a few ulp of libm's.
#pragma once

#include <cstdint>

namespace chainerc::cpu {

void vector_exp(const float* x, float* y, int64_t n);  // y = exp(x)
void vector_exp(const double* x, double* y, int64_t n);
void vector_log(const float* x, float* y, int64_t n);  // y = log(x)
void vector_log(const double* x, double* y, int64_t n);
void vector_tanh(const float* x, float* y, int64_t n);  // y = tanh(x)
void vector_tanh(const double* x, double* y, int64_t n);
void vector_sigmoid(const float* x, float* y, int64_t n);  // y = 1 / (1 + exp(-x))
void vector_sigmoid(const double* x, double* y, int64_t n);

// Reductions over x[0, n), in sixteen interleaved partial results so that
// they vectorise (the order of additions therefore differs from a plain
// loop's, within rounding). max ignores NaN after the first element, as
// std::max does; n >= 1 for vector_max.
float vector_sum(const float* x, int64_t n);
double vector_sum(const double* x, int64_t n);
float vector_dot(const float* x, const float* y, int64_t n);
double vector_dot(const double* x, const double* y, int64_t n);
// sum((x - mean)^2), for variances.
float vector_squared_deviation_sum(const float* x, int64_t n, float mean);
double vector_squared_deviation_sum(const double* x, int64_t n, double mean);
float vector_max(const float* x, int64_t n);
double vector_max(const double* x, int64_t n);

}  // namespace chainerc::cpu
