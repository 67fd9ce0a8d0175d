// BLIS (https://github.com/flame/blis), one of gemm.cpp's candidates. Only
// its header is needed at build time: libblis is opened on first use with
// RTLD_LOCAL, so its BLAS and CBLAS symbols (sgemm_, cblas_sgemm, ...) never
// mix with OpenBLAS's, and a machine without it simply has one candidate less.
#pragma once

#include <cstdint>
#include <string>

namespace chainerc::cpu::blis {

// Whether libblis was found and opened (the first call tries; thread-safe).
bool available();
// e.g. "BLIS 0.9.0 (zen3 kernels, libblis.so.4)"; empty when not available.
std::string version();
// Whether BLIS runs its reference kernels here ("generic": it has none of
// its own for this CPU). False when not available.
bool reference_kernels();
// BLIS's own thread count for its calls (gemm.cpp keeps it at one; bench/gemm
// raises it to compare BLIS's threading with the pool's, then sets it back).
void set_threads(int n);
// One-threaded row-major GEMMs (BLIS's own threads are set to one when it
// is opened). Only call when available().
void sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
           int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc);
void dgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, double alpha,
           const double* a, int64_t lda, const double* b, int64_t ldb, double beta, double* c,
           int64_t ldc);

}  // namespace chainerc::cpu::blis
