#include "gemm.h"

#include <cblas.h>  // OpenBLAS's: also declares openblas_set_num_threads and friends

#include <algorithm>
#include <atomic>
#include <climits>
#include <string>

#include "core/error.h"
#include "parallel.h"

#if CH_HAVE_DNNL
#include <omp.h>
#include <oneapi/dnnl/dnnl.h>
#endif

namespace chainerc::cpu {
namespace {

int blas_int(int64_t v, const char* what) {
  if (v < 0 || v > INT_MAX)
    fail(CH_ERR_SHAPE, "gemm: ", what, " = ", v, " does not fit the BLAS library's 32-bit int");
  return static_cast<int>(v);
}

#if CH_HAVE_DNNL
// float32 GEMM goes through oneDNN: its JIT picks kernels from the CPU's ISA
// flags, so it uses AVX-512 on CPUs newer than the distribution's OpenBLAS
// knows (on the project's Zen 5 machine OpenBLAS 0.3.21 falls back to AVX2
// kernels and runs at about half of oneDNN's rate). Threads are ours (see
// gemm below), so oneDNN runs each call on one thread: its OpenMP team is
// never started, and no OpenMP workers spin beside our pool.
class OneOpenMPThread {
 public:
  // The caller's OpenMP thread count is its own setting: put it back after.
  OneOpenMPThread() : previous_(omp_get_max_threads()) {
    if (previous_ != 1) omp_set_num_threads(1);
  }
  ~OneOpenMPThread() {
    if (previous_ != 1) omp_set_num_threads(previous_);
  }
  OneOpenMPThread(const OneOpenMPThread&) = delete;
  OneOpenMPThread& operator=(const OneOpenMPThread&) = delete;

 private:
  int previous_;
};

dnnl_status_t sgemm_one_thread(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
                               float alpha, const float* a, int64_t lda, const float* b,
                               int64_t ldb, float beta, float* c, int64_t ldc) {
  OneOpenMPThread one;
  return dnnl_sgemm(trans_a ? 'T' : 'N', trans_b ? 'T' : 'N', m, n, k, alpha, a, lda, b, ldb, beta,
                    c, ldc);
}
#endif

// Multiply-adds below which a GEMM stays on one thread: waking a worker costs
// about as much as a 100x100x100 product saves by splitting it.
constexpr int64_t kGemmGrain = int64_t{1} << 21;

}  // namespace

void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
          int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  if (m == 0 || n == 0) return;
  lda = std::max<int64_t>(lda, 1);
  ldb = std::max<int64_t>(ldb, 1);
  ldc = std::max<int64_t>(ldc, 1);
#if CH_HAVE_DNNL
  for (int64_t v : {m, n, k, lda, ldb, ldc}) blas_int(v, "a dimension");
  // Split C into blocks of whole rows (tall C) or whole columns (wide C), one
  // per thread; each block is an independent GEMM on sub-matrices.
  const double work = double(m) * double(n) * double(std::max<int64_t>(k, 1));
  const bool split_rows = m > n;
  const int64_t extent = split_rows ? m : n, align = 16;
  int64_t parts = num_threads();
  if (work < double(parts) * kGemmGrain) parts = static_cast<int64_t>(work / kGemmGrain);
  parts = std::min(parts, (extent + align - 1) / align);
  std::atomic<int> status{dnnl_success};
  auto block = [&](int64_t begin, int64_t end) {
    if (begin >= end) return;
    dnnl_status_t s;
    if (split_rows)
      s = sgemm_one_thread(trans_a, trans_b, end - begin, n, k, alpha,
                           trans_a ? a + begin : a + begin * lda, lda, b, ldb, beta,
                           c + begin * ldc, ldc);
    else
      s = sgemm_one_thread(trans_a, trans_b, m, end - begin, k, alpha, a, lda,
                           trans_b ? b + begin * ldb : b + begin, ldb, beta, c + begin, ldc);
    if (s != dnnl_success) status = s;
  };
  if (parts <= 1) {
    block(0, extent);
  } else {
    parallel_for(parts, 1, [&](int64_t p0, int64_t p1) {
      // Block boundaries on multiples of 16 elements (one AVX-512 register).
      auto edge = [&](int64_t p) {
        return std::min(extent, (extent * p / parts + align - 1) / align * align);
      };
      block(edge(p0), edge(p1));
    });
  }
  if (status != dnnl_success)
    fail(CH_ERR_INTERNAL, "gemm: oneDNN's sgemm failed with status ", int(status), " (m=", m,
         ", n=", n, ", k=", k, ")");
#else
  cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
              trans_b ? CblasTrans : CblasNoTrans, blas_int(m, "m"), blas_int(n, "n"),
              blas_int(k, "k"), alpha, a, blas_int(lda, "lda"), b, blas_int(ldb, "ldb"), beta, c,
              blas_int(ldc, "ldc"));
#endif
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
  name.clear();
#if CH_HAVE_DNNL
  const dnnl_version_t* v = dnnl_version();
  name = "oneDNN " + std::to_string(v->major) + "." + std::to_string(v->minor) + "." +
         std::to_string(v->patch) + " sgemm (float32, " + std::to_string(num_threads()) +
         " threads); ";
#endif
  name += std::string(openblas_get_config()) + " (" + std::to_string(openblas_get_num_threads()) +
          " threads)";
  return name.c_str();
}

void set_blas_threads(int n) { openblas_set_num_threads(n); }

}  // namespace chainerc::cpu
