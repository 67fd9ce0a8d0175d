// CPU kernels of the row normalizations (layer_normalization,
// rms_normalization, group_normalization): rows spread over the pool; each
// row's statistics in one pass of vectorised sums (the mean, then the squared
// deviations from it, both added in double). Backward walks each row twice
// (its two sums, then gx) and adds the parameter gradients per block of
// rows into a block's partial sums, which are added in block order: the
// result does not depend on the thread count.
#include <algorithm>
#include <cmath>
#include <vector>

#include "backend/cpu/kernel_list.h"
#include "backend/cpu/parallel.h"
#include "backend/cpu/vector_math.h"
#include "kernels/normalization.h"

namespace chainerc::cpu {
namespace {

// Rows per block of the parameter gradients' partial sums.
constexpr int64_t kRowBlock = 32;

void row_norm_forward(const Array& x, const Array& gamma, const Array& beta,
                      const kernels::RowNorm& p, Array& y, Array& mean_out, Array& inv_std_out) {
  const int64_t rows = p.rows, D = p.D, R = p.R;
  if (rows == 0 || D == 0) return;
  const int64_t per_group = D / R;
  dispatch_floating(x.dtype(), "row_normalization", [&](auto t) {
    using T = decltype(t);
    const T* px = x.data<T>();
    const T* pg = gamma.data<T>();
    const T* pb = beta.defined() ? beta.data<T>() : nullptr;
    T* py = y.data<T>();
    T* pm = mean_out.data<T>();
    T* pis = inv_std_out.data<T>();
    const int64_t grain = std::max<int64_t>(1, kElementwiseGrain / D);
    parallel_for(rows, grain, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        const T* xr = px + i * D;
        T* yr = py + i * D;
        const double mean =
            p.center ? static_cast<double>(vector_sum(xr, D)) / static_cast<double>(D) : 0.0;
        const double var =
            static_cast<double>(vector_squared_deviation_sum(xr, D, static_cast<T>(mean))) /
            static_cast<double>(D);
        const T inv = static_cast<T>(1.0 / std::sqrt(var + p.eps));
        const T mu = static_cast<T>(mean);
        pm[i] = mu;
        pis[i] = inv;
        const T* g = pg + (i % p.groups) * per_group;
        const T* bt = pb ? pb + (i % p.groups) * per_group : nullptr;
        if (R == 1) {
          if (bt)
            for (int64_t j = 0; j < D; ++j) yr[j] = (xr[j] - mu) * inv * g[j] + bt[j];
          else
            for (int64_t j = 0; j < D; ++j) yr[j] = (xr[j] - mu) * inv * g[j];
        } else {
          for (int64_t c = 0; c < per_group; ++c) {
            const T s = inv * g[c], o = bt ? bt[c] : T(0);
            for (int64_t r = 0; r < R; ++r) yr[c * R + r] = (xr[c * R + r] - mu) * s + o;
          }
        }
      }
    });
  });
}

void row_norm_backward(const Array& x, const Array& gy, const Array& gamma, const Array& mean,
                       const Array& inv_std, const kernels::RowNorm& p, Array& gx, Array& ggamma,
                       Array& gbeta) {
  const int64_t rows = p.rows, D = p.D, R = p.R, per_group = R > 0 ? D / R : 0;
  const int64_t P = p.groups * per_group;  // parameter elements
  dispatch_floating(x.dtype(), "row_normalization", [&](auto t) {
    using T = decltype(t);
    if (rows == 0 || D == 0) {  // no values: the parameters' gradients are zeros
      std::fill(ggamma.data<T>(), ggamma.data<T>() + ggamma.size(), T(0));
      if (gbeta.defined()) std::fill(gbeta.data<T>(), gbeta.data<T>() + gbeta.size(), T(0));
      return;
    }
    const T* px = x.data<T>();
    const T* pgy = gy.data<T>();
    const T* pg = gamma.data<T>();
    const T* pm = mean.data<T>();
    const T* pis = inv_std.data<T>();
    T* pgx = gx.defined() ? gx.data<T>() : nullptr;
    const bool want_beta = gbeta.defined();
    const int64_t blocks = (rows + kRowBlock - 1) / kRowBlock;
    // Per block: ggamma's partial sums, then gbeta's.
    std::vector<double> partial(static_cast<size_t>(blocks * 2 * P), 0.0);
    const int64_t grain = std::max<int64_t>(1, kElementwiseGrain / (D * kRowBlock));
    parallel_for(blocks, grain, [&](int64_t bb, int64_t be) {
      for (int64_t blk = bb; blk < be; ++blk) {
        double* pgg = partial.data() + blk * 2 * P;
        double* pgb = pgg + P;
        const int64_t i_end = std::min(rows, (blk + 1) * kRowBlock);
        for (int64_t i = blk * kRowBlock; i < i_end; ++i) {
          const T* xr = px + i * D;
          const T* gr = pgy + i * D;
          const T mu = pm[i], inv = pis[i];
          const int64_t base = (i % p.groups) * per_group;
          const T* g = pg + base;
          double sum_g = 0, sum_gh = 0;  // sum(gy gamma), sum(gy gamma x_hat)
          for (int64_t c = 0; c < per_group; ++c) {
            double sg = 0, sgh = 0;
            for (int64_t r = 0; r < R; ++r) {
              const int64_t j = c * R + r;
              const T h = (xr[j] - mu) * inv;
              sg += gr[j];
              sgh += gr[j] * h;
            }
            pgg[base + c] += sgh;
            pgb[base + c] += sg;
            sum_g += sg * g[c];
            sum_gh += sgh * g[c];
          }
          if (!pgx) continue;
          T* gxr = pgx + i * D;
          const T a = p.center ? static_cast<T>(sum_g / static_cast<double>(D)) : T(0);
          const T b = static_cast<T>(sum_gh / static_cast<double>(D));
          for (int64_t c = 0; c < per_group; ++c)
            for (int64_t r = 0; r < R; ++r) {
              const int64_t j = c * R + r;
              const T h = (xr[j] - mu) * inv;
              gxr[j] = inv * (gr[j] * g[c] - a - h * b);
            }
        }
      }
    });
    T* pgg = ggamma.data<T>();
    T* pgb = want_beta ? gbeta.data<T>() : nullptr;
    for (int64_t q = 0; q < P; ++q) {
      double sg = 0, sb = 0;
      for (int64_t blk = 0; blk < blocks; ++blk) {
        sg += partial[static_cast<size_t>(blk * 2 * P + q)];
        sb += partial[static_cast<size_t>(blk * 2 * P + P + q)];
      }
      pgg[q] = static_cast<T>(sg);
      if (pgb) pgb[q] = static_cast<T>(sb);
    }
  });
}

}  // namespace

void register_row_normalization_kernels() {
  kernels::row_norm_forward.set(CH_DEVICE_CPU, row_norm_forward);
  kernels::row_norm_backward.set(CH_DEVICE_CPU, row_norm_backward);
}

}  // namespace chainerc::cpu
