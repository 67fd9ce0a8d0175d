#include "gemm.h"

#include <cblas.h>  // OpenBLAS's: also declares openblas_set_num_threads and friends

#include <climits>
#include <string>

#include "core/error.h"

namespace chainerc::cpu {
namespace {

int blas_int(int64_t v, const char* what) {
  if (v < 0 || v > INT_MAX)
    fail(CH_ERR_SHAPE, "gemm: ", what, " = ", v, " does not fit the BLAS library's 32-bit int");
  return static_cast<int>(v);
}

}  // namespace

void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
          int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  if (m == 0 || n == 0) return;
  cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
              trans_b ? CblasTrans : CblasNoTrans, blas_int(m, "m"), blas_int(n, "n"),
              blas_int(k, "k"), alpha, a, blas_int(lda < 1 ? 1 : lda, "lda"), b,
              blas_int(ldb < 1 ? 1 : ldb, "ldb"), beta, c, blas_int(ldc < 1 ? 1 : ldc, "ldc"));
}

void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, double alpha,
          const double* a, int64_t lda, const double* b, int64_t ldb, double beta, double* c,
          int64_t ldc) {
  if (m == 0 || n == 0) return;
  cblas_dgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
              trans_b ? CblasTrans : CblasNoTrans, blas_int(m, "m"), blas_int(n, "n"),
              blas_int(k, "k"), alpha, a, blas_int(lda < 1 ? 1 : lda, "lda"), b,
              blas_int(ldb < 1 ? 1 : ldb, "ldb"), beta, c, blas_int(ldc < 1 ? 1 : ldc, "ldc"));
}

const char* blas_name() {
  thread_local std::string name;
  name = std::string(openblas_get_config()) + " (" + std::to_string(openblas_get_num_threads()) +
         " threads)";
  return name.c_str();
}

void set_blas_threads(int n) { openblas_set_num_threads(n); }

}  // namespace chainerc::cpu
