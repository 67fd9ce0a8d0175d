// CPU kernels of sums and broadcasts (sum, sum along axes, broadcast_to, the
// gradients of broadcasting arithmetic, gradient accumulation) and the GEMM
// entry point.
#include <algorithm>
#include <cmath>
#include <vector>

#include "backend/cpu/elementwise.h"
#include "backend/cpu/gemm.h"
#include "backend/cpu/kernel_list.h"
#include "backend/cpu/parallel.h"
#include "backend/cpu/pointwise.h"
#include "kernels/math.h"

namespace chainerc::cpu {
namespace {

void sum_to_kernel(const Array& x, Array& y) { sum_to_into(x, y); }
void broadcast_to_kernel(const Array& x, Array& y) { broadcast_into(x, y); }
void add_into_kernel(Array& acc, const Array& x) { add_into(acc, x); }

// reduce_extreme: x's axes split into those y keeps (row-major over y's
// elements) and those reduced; each output walks its reduced elements in
// row-major order with an odometer over the reduced axes.
template <typename T>
void reduce_extreme_typed(const Array& x, bool is_min, Array* y, Array* index) {
  const Shape& ys = (y ? y : index)->shape();
  const int32_t nd = x.ndim();
  std::vector<int64_t> stride(nd);
  int64_t s = 1;
  for (int32_t d = nd - 1; d >= 0; --d) {
    stride[d] = s;
    s *= x.shape()[d];
  }
  std::vector<int32_t> kept, red;
  int64_t n_red = 1;
  for (int32_t d = 0; d < nd; ++d) {
    if (ys[d] == 1 && x.shape()[d] != 1) {
      red.push_back(d);
      n_red *= x.shape()[d];
    } else {
      kept.push_back(d);
    }
  }
  const int64_t n_out = (y ? y : index)->size();
  if (n_out == 0 || n_red == 0) return;
  const int32_t nr = static_cast<int32_t>(red.size());
  const T* px = x.data<T>();
  T* py = y ? y->data<T>() : nullptr;
  int32_t* pi = index ? index->data<int32_t>() : nullptr;
  const int64_t grain = std::max<int64_t>(1, kElementwiseGrain / n_red);
  parallel_for(n_out, grain, [&](int64_t b, int64_t e) {
    std::vector<int64_t> count(nr);
    for (int64_t j = b; j < e; ++j) {
      int64_t off = 0, rest = j;  // j's offset in x through the kept axes
      for (int32_t k = static_cast<int32_t>(kept.size()) - 1; k >= 0; --k) {
        const int32_t d = kept[k];
        off += (rest % x.shape()[d]) * stride[d];
        rest /= x.shape()[d];
      }
      std::fill(count.begin(), count.end(), 0);
      T best = px[off];
      int64_t at = 0;
      for (int64_t r = 1; r < n_red; ++r) {
        for (int32_t k = nr - 1; k >= 0; --k) {  // the next reduced element
          const int32_t d = red[k];
          off += stride[d];
          if (++count[k] < x.shape()[d]) break;
          off -= count[k] * stride[d];
          count[k] = 0;
        }
        if (std::isnan(best)) break;
        const T v = px[off];
        if (std::isnan(v) || (is_min ? v < best : v > best)) {
          best = v;
          at = r;
        }
      }
      if (py) py[j] = best;
      if (pi) pi[j] = static_cast<int32_t>(at);
    }
  });
}

void reduce_extreme_kernel(const Array& x, bool is_min, Array* y, Array* index) {
  dispatch_floating(x.dtype(), "reduce_extreme",
                    [&](auto t) { reduce_extreme_typed<decltype(t)>(x, is_min, y, index); });
}

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
  kernels::reduce_extreme.set(cpu, reduce_extreme_kernel);
}

}  // namespace chainerc::cpu
