// im2col / col2im for 2-D convolutions on NCHW arrays, over a chunk of
// samples at once so that one GEMM covers the whole chunk.
//
// Column layout for samples [n0, n0 + nc): a row-major matrix of
// (C * kh * kw) rows and (nc * oh * ow) columns; row (c, ky, kx), column
// (n - n0) * oh * ow + oy * ow + ox holds x[n, c, oy * sy - ph + ky, ox * sx - pw + kx],
// or 0 where that position lies in the padding.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "parallel.h"

namespace chainerc::cpu {

struct Conv2DGeometry {
  int64_t c, h, w;  // input channels and spatial size
  int64_t kh, kw;   // kernel
  int64_t sy, sx;   // stride
  int64_t ph, pw;   // padding
  int64_t oh, ow;   // output spatial size
  int64_t rows() const { return c * kh * kw; }
  int64_t positions() const { return oh * ow; }
};

// Output positions [ox_begin, ox_end) whose input column ox * sx - pw + kx lies in [0, w).
inline void valid_range(int64_t k, int64_t s, int64_t p, int64_t in, int64_t out, int64_t& begin,
                        int64_t& end) {
  // ox * s - p + k >= 0  <=>  ox >= ceil((p - k) / s)
  int64_t lo = p - k;
  begin = lo <= 0 ? 0 : (lo + s - 1) / s;
  // ox * s - p + k <= in - 1  <=>  ox <= floor((in - 1 + p - k) / s)
  int64_t hi = in - 1 + p - k;
  end = hi < 0 ? 0 : hi / s + 1;
  begin = std::min(begin, out);
  end = std::min(std::max(end, begin), out);
}

#if defined(__GNUC__) && !defined(__clang__)
// Rows are short (often 8 to 32 elements): GCC must not turn the copy and
// zero loops into calls to memcpy/memset.
#define CH_IM2COL_LOOPS __attribute__((optimize("no-tree-loop-distribute-patterns")))
#else
#define CH_IM2COL_LOOPS
#endif

// The (oh, ow) block of one column row (c, ky, kx) for one sample:
// d[oy * ow + ox] = plane[iy * w + ix] or 0 in the padding.
template <typename T>
CH_IM2COL_LOOPS void im2col_block(const T* __restrict plane, const Conv2DGeometry& g, int64_t ky,
                                  int64_t kx, T* __restrict d) {
  int64_t x0, x1;
  valid_range(kx, g.sx, g.pw, g.w, g.ow, x0, x1);
  const int64_t off = kx - g.pw, ow = g.ow, sx = g.sx;
  for (int64_t oy = 0; oy < g.oh; ++oy, d += ow) {
    const int64_t iy = oy * g.sy - g.ph + ky;
    if (iy < 0 || iy >= g.h) {
      for (int64_t ox = 0; ox < ow; ++ox) d[ox] = T(0);
      continue;
    }
    const T* row = plane + iy * g.w;
    for (int64_t ox = 0; ox < x0; ++ox) d[ox] = T(0);
    if (sx == 1) {
      for (int64_t ox = x0; ox < x1; ++ox) d[ox] = row[off + ox];
    } else {
      for (int64_t ox = x0; ox < x1; ++ox) d[ox] = row[off + ox * sx];
    }
    for (int64_t ox = x1; ox < ow; ++ox) d[ox] = T(0);
  }
}

// row[off + ox * sx] += s[ox] for ox in [x0, x1).
template <typename T>
inline void add_row(const T* __restrict s, T* __restrict row, int64_t off, int64_t sx, int64_t x0,
                    int64_t x1) {
  if (sx == 1) {
    for (int64_t ox = x0; ox < x1; ++ox) row[off + ox] += s[ox];
  } else {
    for (int64_t ox = x0; ox < x1; ++ox) row[off + ox * sx] += s[ox];
  }
}

// x: the whole input (N, C, H, W); fills col for samples [n0, n0 + nc).
template <typename T>
void im2col(const T* x, const Conv2DGeometry& g, int64_t n0, int64_t nc, T* col) {
  const int64_t rows = g.rows(), P = g.positions(), ld = nc * P;
  parallel_for(
      rows * nc, std::max<int64_t>(1, 4096 / std::max<int64_t>(P, 1)), [&](int64_t b, int64_t e) {
        for (int64_t t = b; t < e; ++t) {
          const int64_t r = t / nc, n = t % nc;
          const int64_t c = r / (g.kh * g.kw), ky = (r / g.kw) % g.kh, kx = r % g.kw;
          im2col_block(x + ((n0 + n) * g.c + c) * g.h * g.w, g, ky, kx, col + r * ld + n * P);
        }
      });
}

// gx (N, C, H, W) += col2im(col) for samples [n0, n0 + nc); col as im2col lays it out.
// Tasks are (channel, block of samples): each reads its rows of col in order
// (streaming) and adds into its own gx planes (no two tasks share a plane).
template <typename T>
void col2im_add(const T* col, const Conv2DGeometry& g, int64_t n0, int64_t nc, T* gx) {
  const int64_t P = g.positions(), ld = nc * P;
  constexpr int64_t kBlock = 16;
  const int64_t blocks = (nc + kBlock - 1) / kBlock;
  parallel_for(g.c * blocks, 1, [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t) {
      const int64_t c = t / blocks, nb = (t % blocks) * kBlock, ne = std::min(nb + kBlock, nc);
      for (int64_t ky = 0; ky < g.kh; ++ky)
        for (int64_t kx = 0; kx < g.kw; ++kx) {
          const int64_t r = (c * g.kh + ky) * g.kw + kx;
          int64_t x0, x1;
          valid_range(kx, g.sx, g.pw, g.w, g.ow, x0, x1);
          for (int64_t n = nb; n < ne; ++n) {
            const T* src = col + r * ld + n * P;
            T* plane = gx + ((n0 + n) * g.c + c) * g.h * g.w;
            for (int64_t oy = 0; oy < g.oh; ++oy) {
              const int64_t iy = oy * g.sy - g.ph + ky;
              if (iy < 0 || iy >= g.h) continue;
              add_row(src + oy * g.ow, plane + iy * g.w, kx - g.pw, g.sx, x0, x1);
            }
          }
        }
    }
  });
}

}  // namespace chainerc::cpu
