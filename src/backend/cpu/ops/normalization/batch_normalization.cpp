// CPU kernels of BatchNormalization: one channel per task of the pool; each
// (sample, channel) row is reduced vectorised in the element type and the
// rows' results are added in double. Backward recomputes x_hat from x and the
// kept statistics, a row at a time into a scratch row.
#include <algorithm>
#include <cmath>
#include <vector>

#include "backend/cpu/kernel_list.h"
#include "backend/cpu/parallel.h"
#include "backend/cpu/vector_math.h"
#include "kernels/normalization.h"
#include "kernels/pointwise/normalization.h"

namespace chainerc::cpu {
namespace {

void batch_norm_forward(const Array& x, const Array& gamma, const Array& beta,
                        const kernels::BatchNorm& bn, Array& avg_mean, Array& avg_var, Array& y,
                        Array& mean_out, Array& inv_std_out) {
  const int64_t L = bn.L, C = bn.C, R = bn.R, m = L * R;
  dispatch_floating(x.dtype(), "batch_normalization", [&](auto t) {
    using T = decltype(t);
    const T* px = x.data<T>();
    const T* pgamma = gamma.data<T>();
    const T* pbeta = beta.data<T>();
    T* py = y.data<T>();
    T* pmean = bn.use_batch ? mean_out.data<T>() : nullptr;
    T* pis = bn.use_batch ? inv_std_out.data<T>() : nullptr;
    T* am = avg_mean.data<T>();
    T* av = avg_var.data<T>();
    const double decay = bn.decay;
    parallel_for(C, 1, [&](int64_t b, int64_t e) {
      for (int64_t c = b; c < e; ++c) {
        double mean, var;
        if (bn.use_batch) {
          double s = 0;
          for (int64_t l = 0; l < L; ++l) s += vector_sum(px + (l * C + c) * R, R);
          mean = s / static_cast<double>(m);
          double v = 0;
          for (int64_t l = 0; l < L; ++l)
            v += vector_squared_deviation_sum(px + (l * C + c) * R, R, static_cast<T>(mean));
          var = v / static_cast<double>(m);
          am[c] = static_cast<T>(decay * am[c] + (1 - decay) * mean);
          av[c] = static_cast<T>(decay * av[c] + (1 - decay) * bn.adjust * var);
        } else {
          mean = am[c];
          var = av[c];
        }
        const T inv = static_cast<T>(1.0 / std::sqrt(var + bn.eps));
        const T mu = static_cast<T>(mean), g = pgamma[c], bt = pbeta[c];
        if (bn.use_batch) {
          pmean[c] = mu;
          pis[c] = inv;
        }
        for (int64_t l = 0; l < L; ++l) {
          const int64_t off = (l * C + c) * R;
          for (int64_t r = 0; r < R; ++r)
            py[off + r] = pointwise::BatchNormApply{}(px[off + r], mu, inv, g, bt);
        }
      }
    });
  });
}

void batch_norm_backward(const Array& x, const Array& gy, const Array& mean, const Array& stat,
                         const Array& gamma, const kernels::BatchNorm& bn, Array& ggamma,
                         Array& gbeta, Array& gx) {
  const int64_t L = bn.L, C = bn.C, R = bn.R, m = L * R;
  dispatch_floating(gy.dtype(), "batch_normalization", [&](auto t) {
    using T = decltype(t);
    const T* px = x.data<T>();
    const T* pg = gy.data<T>();
    const T* pmean = mean.data<T>();
    const T* pstat = stat.data<T>();
    const T* pgamma = gamma.data<T>();
    T* pggamma = ggamma.data<T>();
    T* pgbeta = gbeta.data<T>();
    T* pgx = gx.data<T>();
    parallel_for(C, 1, [&](int64_t b, int64_t e) {
      std::vector<T> row(static_cast<size_t>(R));  // x_hat of one (sample, channel) row
      T* h = row.data();
      for (int64_t c = b; c < e; ++c) {
        const T mu = pmean[c];
        const T inv = bn.use_batch ? pstat[c] : static_cast<T>(1.0 / std::sqrt(pstat[c] + bn.eps));
        double gb = 0, gg = 0;
        for (int64_t l = 0; l < L; ++l) {
          const int64_t off = (l * C + c) * R;
          for (int64_t r = 0; r < R; ++r) h[r] = pointwise::BatchNormHat{}(px[off + r], mu, inv);
          gb += vector_sum(pg + off, R);
          gg += vector_dot(pg + off, h, R);
        }
        pgbeta[c] += static_cast<T>(gb);
        pggamma[c] += static_cast<T>(gg);
        const T coeff = pgamma[c] * inv;
        if (bn.use_batch) {
          const T mg = static_cast<T>(gg / static_cast<double>(m));
          const T mb = static_cast<T>(gb / static_cast<double>(m));
          for (int64_t l = 0; l < L; ++l) {
            const int64_t off = (l * C + c) * R;
            for (int64_t r = 0; r < R; ++r)
              pgx[off + r] = pointwise::BatchNormGrad{}(
                  pg[off + r], pointwise::BatchNormHat{}(px[off + r], mu, inv), coeff, mg, mb);
          }
        } else {
          for (int64_t l = 0; l < L; ++l) {
            const int64_t off = (l * C + c) * R;
            for (int64_t r = 0; r < R; ++r) pgx[off + r] = coeff * pg[off + r];
          }
        }
      }
    });
  });
}

}  // namespace

void register_batch_normalization_kernels() {
  kernels::batch_norm_forward.set(CH_DEVICE_CPU, batch_norm_forward);
  kernels::batch_norm_backward.set(CH_DEVICE_CPU, batch_norm_backward);
}

}  // namespace chainerc::cpu
