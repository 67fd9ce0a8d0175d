// The GEMM kernel on CUDA: chainerc's row-major products through the CUDA
// backend's one cuBLAS entry point (cuda::gemm, column-major). A row-major
// C = op(A) op(B) is the column-major C^T = op(B)^T op(A)^T, so A and B swap
// places and keep their transposition flags and leading dimensions. A batch
// of products is one cublas<t>gemmStridedBatched call.
#include "cuda/ops/elementwise.cuh"
#include "cuda/ops/kernel_list.h"
#include "cuda/runtime/libraries.h"
#include "kernels/math.h"

namespace chainerc::cuda {
namespace {

int as_int(int64_t v, const char* what) {
  if (v < 0 || v > INT32_MAX)
    fail(CH_ERR_SHAPE, "gemm: ", what, " = ", v, " is beyond what cuBLAS takes (0 .. 2^31-1)");
  return static_cast<int>(v);
}

void gemm_kernel(const kernels::Gemm& g, const Array& a, const Array& b, Array& c) {
  if (g.m == 0 || g.n == 0) return;
  const int m = as_int(g.m, "m"), n = as_int(g.n, "n"), k = as_int(g.k, "k");
  const int lda = as_int(g.lda, "lda"), ldb = as_int(g.ldb, "ldb"), ldc = as_int(g.ldc, "ldc");
  const int32_t device = c.device().index;
  DeviceGuard guard(device);
  const size_t w = dtype_size(c.dtype());
  const auto* pa = static_cast<const char*>(a.raw()) + g.offset_a * w;
  const auto* pb = static_cast<const char*>(b.raw()) + g.offset_b * w;
  auto* pc = static_cast<char*>(c.raw()) + g.offset_c * w;
  if (g.batch == 1) {
    gemm(device, c.dtype(), g.trans_b, g.trans_a, n, m, k, g.alpha, pb, ldb, pa, lda, g.beta, pc,
         ldc);
    return;
  }
  // One cuBLAS call for the whole batch (not a call, and a lock, per product).
  gemm_strided_batched(device, c.dtype(), g.trans_b, g.trans_a, n, m, k, g.alpha, pb, ldb,
                       g.stride_b, pa, lda, g.stride_a, g.beta, pc, ldc, g.stride_c,
                       as_int(g.batch, "batch"));
}

}  // namespace

void register_gemm_kernels() { kernels::gemm.set(CH_DEVICE_CUDA, gemm_kernel); }

}  // namespace chainerc::cuda
