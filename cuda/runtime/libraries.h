// Per-device library state of the CUDA backend, created lazily on first use:
// a cuBLAS handle (its workspace from the device's caching allocator) and a
// cuRAND generator seeded from CH_SEED (mixed with the device index, so each
// device draws a different, reproducible sequence) or from entropy.
// Both work on the device's engine stream (streams.h).
#pragma once

#include <cublas_v2.h>
#include <curand.h>

#include <cstdint>
#include <mutex>

#include "core/dtype.h"

namespace chainerc::cuda {

// Borrowed; valid for the life of the process. Throws Error(CH_ERR_DEVICE).
cublasHandle_t cublas_handle(int32_t device);
// Borrowed; use it only while `lock` (which this locks) is held.
curandGenerator_t curand_generator(int32_t device, std::unique_lock<std::mutex>& lock);
// Reseed device `device`'s generator from `seed` as CH_SEED=seed would (the
// seed's cuda.seed): the generator starts from device_seed(seed, device).
void seed_generator(int32_t device, uint64_t seed);
// The seed device `device` starts from when CH_SEED is `base`.
uint64_t device_seed(uint64_t base, int32_t device);

// Throws Error naming `call` unless `st` is CUBLAS_STATUS_SUCCESS.
void check_blas(cublasStatus_t st, const char* call);

// The one GEMM entry point of the CUDA backend: column-major
// C = alpha * op(A) * op(B) + beta * C on device `device`'s engine stream,
// op(A) m x k, op(B) k x n, C m x n, as cublas<t>gemm (float32 or float64).
// Under -Dcuda-emulation=true a reference over OpenBLAS with cuBLAS's checks.
// Arguments cuBLAS refuses throw Error(CH_ERR_INVALID_ARGUMENT) naming them.
void gemm(int32_t device, DType dtype, bool trans_a, bool trans_b, int m, int n, int k,
          double alpha, const void* a, int lda, const void* b, int ldb, double beta, void* c,
          int ldc);
// `batch` such products in one cuBLAS call (cublas<t>gemmStridedBatched), the
// i-th on a + i stride_a, b + i stride_b, c + i stride_c (elements).
void gemm_strided_batched(int32_t device, DType dtype, bool trans_a, bool trans_b, int m, int n,
                          int k, double alpha, const void* a, int lda, int64_t stride_a,
                          const void* b, int ldb, int64_t stride_b, double beta, void* c, int ldc,
                          int64_t stride_c, int batch);

}  // namespace chainerc::cuda
