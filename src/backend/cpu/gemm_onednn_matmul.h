// oneDNN's matmul primitive (https://github.com/oneapi-src/oneDNN), one of
// gemm.cpp's candidates beside oneDNN's sgemm: a primitive is made for one
// exact shape (the transposes, m, n, k, the strides, alpha, beta) and on an
// AVX-512 CPU runs oneDNN's batch-reduce GEMM kernels ("brg:avx512_core"),
// which take a transposed B without sgemm's packing pass (measured:
// bench/results/constants.md, oneDNN's matmul primitive).
// Its calls cost about a microsecond more than sgemm's (the memory objects
// made per call), so the chooser leaves it the classes where it wins.
//
// Primitives are kept per shape (kMaxPrimitives; a few KiB to tens of KiB of
// heap each), made on first use under a lock and run from any thread, each
// call with its own scratchpad (from the arrays' caching allocator).
#pragma once

#include <cstdint>
#include <string>

namespace chainerc::cpu::onednn_matmul {

// Whether oneDNN is built in (float32 only, as its sgemm).
bool available();
// "oneDNN 2.6.3", the library both oneDNN candidates call (its sgemm and its
// matmul); empty when not available.
std::string onednn_version();
// e.g. "oneDNN 2.6.3 matmul (avx512_core_bf16 kernels)"; empty when not
// available.
std::string version();
// Row-major C (m x n) = alpha op(A) op(B) + beta C on the calling thread,
// whose OpenMP thread count the caller keeps at one. False (C untouched) when
// no primitive could be had (oneDNN refused the shape, or kMaxPrimitives are
// held): the caller then uses oneDNN's sgemm.
bool sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
           int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc);

// Primitives kept at most; shapes beyond this many distinct ones are left to
// oneDNN's sgemm.
constexpr int kMaxPrimitives = 256;
// Primitives made so far (for the tests).
int primitives_held();

}  // namespace chainerc::cpu::onednn_matmul
