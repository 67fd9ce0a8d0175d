// Window geometry shared by the CUDA pooling kernels (kernels::Pool2D): the
// part of an output's window inside the input plane, and the outputs whose
// windows cover an input position (the gather of the backward kernels).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/pooling.h"

namespace chainerc::cuda {

// Rows [ya, yb) and columns [xa, xb) of output (oy, ox)'s window inside the
// plane (empty for a window wholly in the padding).
struct Window {
  int64_t ya, yb, xa, xb;
};
__device__ __forceinline__ Window window_of(const kernels::Pool2D& p, int64_t oy, int64_t ox) {
  const int64_t y0 = oy * p.sy - p.ph, x0 = ox * p.sx - p.pw;
  Window w;
  w.ya = y0 > 0 ? y0 : 0;
  w.yb = y0 + p.kh < p.h ? y0 + p.kh : p.h;
  w.xa = x0 > 0 ? x0 : 0;
  w.xb = x0 + p.kw < p.w ? x0 + p.kw : p.w;
  return w;
}

// Output rows [oya, oyb) and columns [oxa, oxb) whose windows contain input
// position (iy, ix): oy * sy - ph <= iy < oy * sy - ph + kh.
struct Covering {
  int64_t oya, oyb, oxa, oxb;
};
__device__ __forceinline__ void covering_1d(int64_t i, int64_t k, int64_t s, int64_t pad,
                                            int64_t n_out, int64_t& a, int64_t& b) {
  const int64_t lo = i + pad - k;  // outputs must start after this
  a = lo < 0 ? 0 : lo / s + 1;
  const int64_t hi = (i + pad) / s + 1;
  b = hi < n_out ? hi : n_out;
}
__device__ __forceinline__ Covering covering(const kernels::Pool2D& p, int64_t iy, int64_t ix) {
  Covering c;
  covering_1d(iy, p.kh, p.sy, p.ph, p.oh, c.oya, c.oyb);
  covering_1d(ix, p.kw, p.sx, p.pw, p.ow, c.oxa, c.oxb);
  return c;
}

// -inf in T (the maximum of a window wholly in the padding).
template <typename T>
__device__ __forceinline__ T negative_infinity() {
  return -static_cast<T>(__int_as_float(0x7f800000));
}

}  // namespace chainerc::cuda
