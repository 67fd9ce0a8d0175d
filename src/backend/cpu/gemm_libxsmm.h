// libxsmm (https://github.com/libxsmm/libxsmm), one of gemm.cpp's candidates:
// its code generator writes an x86 GEMM kernel for one exact shape (m, n, k,
// the strides, beta) at run time, for the CPU it runs on (AVX-512, AVX2, ...).
// The kernels neither pack their operands nor block for the caches, which is
// what the backward products of a linear layer at batch 100 need
// (measured: bench/results/constants.md, libxsmm).
//
// Only the generator is linked (Debian's libxsmm-dev: libxsmmgen.a), not
// libxsmm's dispatch layer, whose registry costs 10 MiB of resident memory
// at start; the kernels are kept here instead, one executable mapping each.
//
// The generated kernels take B as stored in row-major terms only (libxsmm
// 1.17 generates no kernel whose first column-major operand is transposed),
// alpha 1 and beta 0 or 1: supports() says which calls they can do.
#pragma once

#include <cstdint>
#include <string>

namespace chainerc::cpu::libxsmm {

// Whether the generator is built in and writes kernels for this CPU (x86-64
// with AVX2 or more).
bool available();
// e.g. "libxsmm 1.17 JIT (cpx kernels)"; empty when not available.
std::string version();
// Whether a kernel can compute this product: B not transposed (row-major),
// alpha 1, beta 0 or 1.
bool supports(bool trans_b, double alpha, double beta);
// Row-major C (m x n) = op(A) B (+ C when beta is 1), on the calling thread.
// False (C untouched) when the call is not supported or no kernel could be
// had (the generator failed, or kMaxKernels are held): the caller then uses
// another library.
bool sgemm(bool trans_a, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
           const float* b, int64_t ldb, float beta, float* c, int64_t ldc);
bool dgemm(bool trans_a, int64_t m, int64_t n, int64_t k, double alpha, const double* a,
           int64_t lda, const double* b, int64_t ldb, double beta, double* c, int64_t ldc);

// Kernels kept at most (each one shape; a few KiB of code in its own pages).
// Shapes beyond this many distinct ones are left to other libraries.
constexpr int kMaxKernels = 1024;
// Kernels generated so far (for the tests).
int kernels_held();

}  // namespace chainerc::cpu::libxsmm
