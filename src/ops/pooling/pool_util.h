// Window arguments and input checks shared by the 2-D pooling functions
// (NCHW arrays); the geometry struct is the kernels' (kernels/pooling.h).
#pragma once

#include <cstdint>

#include "core/array.h"
#include "core/error.h"
#include "kernels/pooling.h"
#include "ops/op_util.h"

namespace chainerc::ops {

using kernels::Pool2D;  // n, c, h, w, oh, ow are set by bind_pool()

// Validates the window arguments (stride <= 0 means the window size, as the
// seed's stride=None).
inline Pool2D make_pool(const char* who, int64_t kh, int64_t kw, int64_t sy, int64_t sx, int64_t ph,
                        int64_t pw, bool cover_all) {
  if (kh <= 0 || kw <= 0)
    fail(CH_ERR_INVALID_ARGUMENT, who, ": ksize (", kh, ", ", kw, ") must be positive");
  if (ph < 0 || pw < 0)
    fail(CH_ERR_INVALID_ARGUMENT, who, ": pad (", ph, ", ", pw, ") must not be negative");
  Pool2D p{};
  p.kh = kh;
  p.kw = kw;
  p.sy = sy <= 0 ? kh : sy;
  p.sx = sx <= 0 ? kw : sx;
  p.ph = ph;
  p.pw = pw;
  p.cover_all = cover_all;
  return p;
}

// Output extent as Chainer's get_conv_outsize.
// Overflow-checked (core/shape.h's window_count).
inline int64_t pool_out_size(int64_t size, int64_t k, int64_t s, int64_t p, bool cover_all,
                             const char* who, const char* axis) {
  return window_count(size, k, s, p, cover_all, who, axis);
}

// Checks x (4-d float) and fills in the sizes.
inline void bind_pool(Pool2D& p, const char* who, const Array& x) {
  check_float(who, x);
  if (x.ndim() != 4)
    fail(CH_ERR_SHAPE, who, ": x must be 4-d (batch, channels, height, width); got a ",
         x.describe());
  p.n = x.shape()[0];
  p.c = x.shape()[1];
  p.h = x.shape()[2];
  p.w = x.shape()[3];
  if (!window_fits(p.h, p.kh, p.ph) || !window_fits(p.w, p.kw, p.pw))
    fail(CH_ERR_SHAPE, who, ": the ", p.kh, "x", p.kw, " window is larger than the padded ", p.h,
         "x", p.w, " input (pad ", p.ph, ", ", p.pw, ")");
  p.oh = pool_out_size(p.h, p.kh, p.sy, p.ph, p.cover_all, who, "height");
  p.ow = pool_out_size(p.w, p.kw, p.sx, p.pw, p.cover_all, who, "width");
}

}  // namespace chainerc::ops
