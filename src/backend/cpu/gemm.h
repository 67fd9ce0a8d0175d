// Matrix products on the CPU through CBLAS (OpenBLAS in the default build).
#pragma once

#include <cstdint>

namespace chainerc::cpu {

// Row-major C (m x n) = alpha * op(A) * op(B) + beta * C, where op(A) is
// m x k (A itself, or A transposed when trans_a) and op(B) is k x n.
// lda/ldb/ldc are the row strides of A, B and C as stored.
void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
          int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc);
void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, double alpha,
          const double* a, int64_t lda, const double* b, int64_t ldb, double beta, double* c,
          int64_t ldc);

// Which BLAS is linked, e.g. "OpenBLAS 0.3.21 (pthread, 2 threads)".
const char* blas_name();
// Threads the BLAS library may use (set_num_threads in parallel.h calls it).
void set_blas_threads(int n);

}  // namespace chainerc::cpu
