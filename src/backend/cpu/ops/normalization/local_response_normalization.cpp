// CPU kernels of local_response_normalization: one sample per task of the
// pool, with the channel window summed by a running window per position.
// The scales u^-beta of a sample are computed together as exp(-beta log u)
// through the vectorised exp and log (a scalar pow per element is several
// times slower; results within a few ulp of pow's); a unit scale that is not
// positive (k = 0 with a zero window, or negative k or alpha) takes pow, as
// the per-element functor does.
#include <algorithm>
#include <vector>

#include "backend/cpu/kernel_list.h"
#include "backend/cpu/parallel.h"
#include "backend/cpu/vector_math.h"
#include "kernels/normalization.h"
#include "kernels/pointwise/normalization.h"

namespace chainerc::cpu {
namespace {

// out[c, r] = sum over channels j in [c - half, c + half] of in[j, r] for a
// (C, R) block, by a running window (per position r).
template <typename T>
void window_sum(const T* in, T* out, int64_t C, int64_t R, int64_t half) {
  std::fill(out, out + C * R, T(0));
  for (int64_t c = 0; c < C; ++c) {
    const int64_t lo = std::max<int64_t>(0, c - half), hi = std::min(C - 1, c + half);
    T* o = out + c * R;
    for (int64_t j = lo; j <= hi; ++j) {
      const T* s = in + j * R;
      for (int64_t r = 0; r < R; ++r) o[r] += s[r];
    }
  }
}

// (N, C, R) of x viewed along axis 1.
void dims(const Array& x, int64_t& N, int64_t& C, int64_t& R) {
  N = x.shape()[0];
  C = x.shape()[1];
  R = N > 0 && C > 0 ? x.size() / (N * C) : 0;
}

// unit_scale of sample i's (C, R) block into `u` (C * R elements), from x
// through the scratch `sq`.
template <typename T>
void unit_scales(const T* x, T* sq, T* u, int64_t C, int64_t R, const kernels::Lrn& lrn) {
  for (int64_t q = 0; q < C * R; ++q) sq[q] = x[q] * x[q];
  window_sum(sq, u, C, R, lrn.n / 2);
  const T k = static_cast<T>(lrn.k), alpha = static_cast<T>(lrn.alpha);
  for (int64_t q = 0; q < C * R; ++q) u[q] = pointwise::LrnUnitScale{}(u[q], k, alpha);
}

// scale[q] = u[q]^-beta for n elements (pointwise::LrnScale's value).
template <typename T>
void scales(const T* u, T* scale, int64_t n, T beta) {
  vector_log(u, scale, n);
  for (int64_t q = 0; q < n; ++q) scale[q] *= -beta;
  vector_exp(scale, scale, n);
  for (int64_t q = 0; q < n; ++q)
    if (!(u[q] > 0)) scale[q] = pointwise::LrnScale{}(u[q], beta);
}

void lrn_forward(const Array& x, const kernels::Lrn& lrn, Array& y) {
  if (x.size() == 0) return;  // no rows to walk, however many the extents say
  int64_t N, C, R;
  dims(x, N, C, R);
  dispatch_floating(x.dtype(), "local_response_normalization", [&](auto t) {
    using T = decltype(t);
    const T* px = x.data<T>();
    T* py = y.data<T>();
    const T beta = static_cast<T>(lrn.beta);
    parallel_for(N, 1, [&](int64_t b, int64_t e) {
      std::vector<T> sq(static_cast<size_t>(C * R)), u(static_cast<size_t>(C * R));
      for (int64_t i = b; i < e; ++i) {
        const int64_t off = i * C * R;
        unit_scales(px + off, sq.data(), u.data(), C, R, lrn);
        scales(u.data(), sq.data(), C * R, beta);
        for (int64_t q = 0; q < C * R; ++q) py[off + q] = px[off + q] * sq[q];
      }
    });
  });
}

void lrn_backward(const Array& x, const Array& y, const Array& gy, const kernels::Lrn& lrn,
                  Array& gx) {
  if (x.size() == 0) return;  // no rows to walk, however many the extents say
  int64_t N, C, R;
  dims(x, N, C, R);
  dispatch_floating(x.dtype(), "local_response_normalization", [&](auto t) {
    using T = decltype(t);
    const T* px = x.data<T>();
    const T* py = y.data<T>();
    const T* pg = gy.data<T>();
    T* pgx = gx.data<T>();
    const T beta = static_cast<T>(lrn.beta);
    const T c2 = static_cast<T>(2 * lrn.alpha * lrn.beta);
    parallel_for(N, 1, [&](int64_t b, int64_t e) {
      std::vector<T> scratch(static_cast<size_t>(C * R)), u(static_cast<size_t>(C * R)),
          sum(static_cast<size_t>(C * R));
      for (int64_t i = b; i < e; ++i) {
        const int64_t off = i * C * R;
        unit_scales(px + off, scratch.data(), u.data(), C, R, lrn);
        for (int64_t q = 0; q < C * R; ++q) scratch[q] = py[off + q] * pg[off + q] / u[q];
        window_sum(scratch.data(), sum.data(), C, R, lrn.n / 2);
        scales(u.data(), scratch.data(), C * R, beta);
        for (int64_t q = 0; q < C * R; ++q)
          pgx[off + q] = pointwise::LrnGrad{}(pg[off + q], px[off + q], scratch[q], sum[q], c2);
      }
    });
  });
}

}  // namespace

void register_local_response_normalization_kernels() {
  kernels::lrn_forward.set(CH_DEVICE_CPU, lrn_forward);
  kernels::lrn_backward.set(CH_DEVICE_CPU, lrn_backward);
}

}  // namespace chainerc::cpu
