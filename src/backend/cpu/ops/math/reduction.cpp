// CPU kernels of sums and broadcasts (sum, sum along axes, broadcast_to, the
// gradients of broadcasting arithmetic, gradient accumulation) and the GEMM
// entry point.
#include "backend/cpu/elementwise.h"
#include "backend/cpu/gemm.h"
#include "backend/cpu/kernel_list.h"
#include "backend/cpu/pointwise.h"
#include "kernels/math.h"

namespace chainerc::cpu {
namespace {

void sum_to_kernel(const Array& x, Array& y) { sum_to_into(x, y); }
void broadcast_to_kernel(const Array& x, Array& y) { broadcast_into(x, y); }
void add_into_kernel(Array& acc, const Array& x) { add_into(acc, x); }

void gemm_kernel(const kernels::Gemm& g, const Array& a, const Array& b, Array& c) {
  dispatch_floating(c.dtype(), "gemm", [&](auto t) {
    using T = decltype(t);
    const T* pa = a.data<T>() + g.offset_a;
    const T* pb = b.data<T>() + g.offset_b;
    T* pc = c.data<T>() + g.offset_c;
    if (g.m == 0 || g.n == 0) return;
    for (int64_t i = 0; i < g.batch; ++i) {
      T* c = pc + i * g.stride_c;
      if (g.k == 0) {  // C = beta C, as BLAS does for an empty inner dimension
        for (int64_t r = 0; r < g.m; ++r)
          for (int64_t j = 0; j < g.n; ++j)
            c[r * g.ldc + j] = g.beta == 0 ? T(0) : static_cast<T>(g.beta) * c[r * g.ldc + j];
        continue;
      }
      // The workspace serves one product at a time (kernels::Gemm).
      const GemmWorkspace workspace =
          g.batch == 1 ? GemmWorkspace{g.workspace, g.workspace_bytes} : GemmWorkspace{};
      gemm(g.trans_a, g.trans_b, g.m, g.n, g.k, static_cast<T>(g.alpha), pa + i * g.stride_a, g.lda,
           pb + i * g.stride_b, g.ldb, static_cast<T>(g.beta), c, g.ldc, workspace);
    }
  });
}

}  // namespace

void register_reduction_kernels() {
  constexpr int32_t cpu = CH_DEVICE_CPU;
  kernels::sum_to.set(cpu, sum_to_kernel);
  kernels::broadcast_to.set(cpu, broadcast_to_kernel);
  kernels::add_into.set(cpu, add_into_kernel);
  kernels::gemm.set(cpu, gemm_kernel);
}

}  // namespace chainerc::cpu
