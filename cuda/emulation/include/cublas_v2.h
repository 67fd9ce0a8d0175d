// Emulated cuBLAS (-Dcuda-emulation=true): handles, streams, workspaces and
// column-major SGEMM/DGEMM over OpenBLAS, with cuBLAS's own argument checks
// (cublasSgemm's: m, n, k >= 0; lda >= max(1, rows of A as stored), and so
// on) and its documented quirk that cublasSetStream resets a workspace set
// by cublasSetWorkspace. Implemented in cuda/emulation/runtime.cpp.
#pragma once

#include "cuda_runtime_api.h"

typedef enum {
  CUBLAS_STATUS_SUCCESS = 0,
  CUBLAS_STATUS_NOT_INITIALIZED = 1,
  CUBLAS_STATUS_ALLOC_FAILED = 3,
  CUBLAS_STATUS_INVALID_VALUE = 7,
  CUBLAS_STATUS_ARCH_MISMATCH = 8,
  CUBLAS_STATUS_MAPPING_ERROR = 11,
  CUBLAS_STATUS_EXECUTION_FAILED = 13,
  CUBLAS_STATUS_INTERNAL_ERROR = 14,
  CUBLAS_STATUS_NOT_SUPPORTED = 15,
} cublasStatus_t;

typedef enum { CUBLAS_OP_N = 0, CUBLAS_OP_T = 1, CUBLAS_OP_C = 2 } cublasOperation_t;

// Math modes (cuBLAS's values). Under CUBLAS_TF32_TENSOR_OP_MATH the emulated
// SGEMM rounds A and B to TF32 (10-bit mantissa, to nearest even) before the
// float32 product, as the tensor cores' inputs are.
typedef enum {
  CUBLAS_DEFAULT_MATH = 0,
  CUBLAS_TENSOR_OP_MATH = 1,
  CUBLAS_PEDANTIC_MATH = 2,
  CUBLAS_TF32_TENSOR_OP_MATH = 3,
} cublasMath_t;

struct cublasContext;
typedef struct cublasContext* cublasHandle_t;

cublasStatus_t cublasCreate(cublasHandle_t* handle);
cublasStatus_t cublasDestroy(cublasHandle_t handle);
cublasStatus_t cublasSetStream(cublasHandle_t handle, cudaStream_t stream);
cublasStatus_t cublasSetWorkspace(cublasHandle_t handle, void* workspace, size_t bytes);
const char* cublasGetStatusString(cublasStatus_t status);
cublasStatus_t cublasSetMathMode(cublasHandle_t handle, cublasMath_t mode);
cublasStatus_t cublasGetMathMode(cublasHandle_t handle, cublasMath_t* mode);
cublasStatus_t cublasSgemm(cublasHandle_t handle, cublasOperation_t transa,
                           cublasOperation_t transb, int m, int n, int k, const float* alpha,
                           const float* A, int lda, const float* B, int ldb, const float* beta,
                           float* C, int ldc);
cublasStatus_t cublasDgemm(cublasHandle_t handle, cublasOperation_t transa,
                           cublasOperation_t transb, int m, int n, int k, const double* alpha,
                           const double* A, int lda, const double* B, int ldb, const double* beta,
                           double* C, int ldc);
// batchCount products, the i-th of A + i strideA, B + i strideB, C + i strideC.
cublasStatus_t cublasSgemmStridedBatched(cublasHandle_t handle, cublasOperation_t transa,
                                         cublasOperation_t transb, int m, int n, int k,
                                         const float* alpha, const float* A, int lda,
                                         long long int strideA, const float* B, int ldb,
                                         long long int strideB, const float* beta, float* C,
                                         int ldc, long long int strideC, int batchCount);
cublasStatus_t cublasDgemmStridedBatched(cublasHandle_t handle, cublasOperation_t transa,
                                         cublasOperation_t transb, int m, int n, int k,
                                         const double* alpha, const double* A, int lda,
                                         long long int strideA, const double* B, int ldb,
                                         long long int strideB, const double* beta, double* C,
                                         int ldc, long long int strideC, int batchCount);

namespace chainerc::cuda::emu {
// The workspace a handle will use: the one set by cublasSetWorkspace, or
// null (cuBLAS's own allocation outside chainerc's pool).
void* cublas_workspace(cublasHandle_t handle, size_t* bytes);
}  // namespace chainerc::cuda::emu
