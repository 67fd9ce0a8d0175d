// CPU kernels of BinaryHierarchicalSoftmax: per sample, the dot products of x
// with the rows of W along its word's path, over the pool; W's gradient
// scattered afterwards in sample order (rows are shared by samples).
#include <algorithm>
#include <vector>

#include "backend/cpu/kernel_list.h"
#include "backend/cpu/parallel.h"
#include "core/error.h"
#include "kernels/loss.h"
#include "kernels/pointwise/loss.h"

namespace chainerc::cpu {
namespace {

kernels::BadLabel hsm_find_bad_label_kernel(const Array& t, const kernels::HsmPaths& paths) {
  const int32_t* pt = t.data<int32_t>();
  for (int64_t s = 0, n = t.size(); s < n; ++s)
    if (pt[s] < 0 || pt[s] >= static_cast<int64_t>(paths.start.size()) ||
        paths.start[static_cast<size_t>(pt[s])] < 0)
      return {s, pt[s]};
  return {};
}

void hsm_kernel(const Array& x, const Array& t, const Array& W, const kernels::HsmPaths& paths,
                Array& y) {
  dispatch_floating(x.dtype(), "BinaryHierarchicalSoftmax", [&](auto tag) {
    using T = decltype(tag);
    const int64_t n = x.shape()[0], d = x.shape()[1];
    std::vector<double> per(static_cast<size_t>(n));
    const int32_t* pt = t.data<int32_t>();
    const T* px = x.data<T>();
    const T* pw = W.data<T>();
    parallel_for(
        n, std::max<int64_t>(1, 4096 / (d * paths.max_length + 1)), [&](int64_t b, int64_t e) {
          for (int64_t s = b; s < e; ++s) {
            const size_t w = static_cast<size_t>(pt[s]);
            const int64_t off = paths.start[w], len = paths.length[w];
            T loss = 0;
            for (int64_t k = 0; k < len; ++k) {
              const T* row = pw + paths.nodes[static_cast<size_t>(off + k)] * d;
              T dot = 0;
              for (int64_t j = 0; j < d; ++j) dot += row[j] * px[s * d + j];
              loss += pointwise::Softplus{}(-dot * T(paths.codes[static_cast<size_t>(off + k)]));
            }
            per[static_cast<size_t>(s)] = static_cast<double>(loss);
          }
        });
    double total = 0;
    for (double v : per) total += v;
    y.data<T>()[0] = static_cast<T>(total);
  });
}

void hsm_grad_kernel(const Array& x, const Array& t, const Array& W, const kernels::HsmPaths& paths,
                     const Array& gloss_in, Array& gx, Array& gW) {
  dispatch_floating(x.dtype(), "BinaryHierarchicalSoftmax", [&](auto tag) {
    using T = decltype(tag);
    const T gloss = gloss_in.data<T>()[0];
    const int32_t* pt = t.data<int32_t>();
    const T* px = x.data<T>();
    const T* pw = W.data<T>();
    T* pgx = gx.data<T>();
    T* pgw = gW.data<T>();
    const int64_t n = x.shape()[0], d = x.shape()[1];
    // g[s, k] = -gloss * b_k * sigmoid(-b_k * W[e_k] . x_s), kept for the gW pass.
    std::vector<T> g(static_cast<size_t>(n * paths.max_length));
    parallel_for(n, std::max<int64_t>(1, 4096 / (d * paths.max_length + 1)),
                 [&](int64_t b, int64_t e) {
                   for (int64_t s = b; s < e; ++s) {
                     const size_t w = static_cast<size_t>(pt[s]);
                     const int64_t off = paths.start[w], len = paths.length[w];
                     for (int64_t k = 0; k < len; ++k) {
                       const T* row = pw + paths.nodes[static_cast<size_t>(off + k)] * d;
                       const T code = T(paths.codes[static_cast<size_t>(off + k)]);
                       T dot = 0;
                       for (int64_t j = 0; j < d; ++j) dot += row[j] * px[s * d + j];
                       const T gk = pointwise::HsmGradCoeff{}(dot, code, gloss);
                       g[static_cast<size_t>(s * paths.max_length + k)] = gk;
                       for (int64_t j = 0; j < d; ++j) pgx[s * d + j] += gk * row[j];
                     }
                   }
                 });
    for (int64_t s = 0; s < n; ++s) {  // scatter into gW: rows are shared by samples
      const size_t w = static_cast<size_t>(pt[s]);
      const int64_t off = paths.start[w], len = paths.length[w];
      for (int64_t k = 0; k < len; ++k) {
        T* grow = pgw + paths.nodes[static_cast<size_t>(off + k)] * d;
        const T gk = g[static_cast<size_t>(s * paths.max_length + k)];
        for (int64_t j = 0; j < d; ++j) grow[j] += gk * px[s * d + j];
      }
    }
  });
}

// At once on the CPU (nothing to wait for).
void hsm_defer_bad_label(const Array& t, const kernels::HsmPaths& paths,
                         const kernels::DescribeBadIndex& describe) {
  const kernels::BadLabel bad = hsm_find_bad_label_kernel(t, paths);
  if (bad.index >= 0) fail(CH_ERR_INVALID_ARGUMENT, describe(bad.index, bad.value));
}

}  // namespace

void register_hierarchical_softmax_kernels() {
  kernels::hsm_find_bad_label.set(CH_DEVICE_CPU, hsm_find_bad_label_kernel);
  kernels::hsm_defer_bad_label.set(CH_DEVICE_CPU, hsm_defer_bad_label);
  kernels::hsm.set(CH_DEVICE_CPU, hsm_kernel);
  kernels::hsm_grad.set(CH_DEVICE_CPU, hsm_grad_kernel);
}

}  // namespace chainerc::cpu
