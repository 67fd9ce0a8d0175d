// CPU kernels of Convolution2D (NCHW).
//
// The batch is cut into one part per thread, and each thread works through
// its part alone (one fork-join per call: handing every small step to the
// pool made two threads slower than one). Within a part, chunks of samples
// are unfolded by im2col into one column matrix (C*kh*kw rows, chunk*oh*ow
// columns), multiplied by one GEMM (W (O, C*kh*kw) x col) and scattered into
// NCHW with the bias added. Backward recomputes the columns (cheaper than
// keeping them) and does, per chunk, gW += gy_mat x col^T, gcol = W^T x
// gy_mat and col2im into gx. Part 0 accumulates into the parameter gradients
// directly, the others into their own buffers, added in part order
// afterwards: the same sums for a given thread count, no races.
#include <algorithm>

#include "backend/cpu/gemm.h"
#include "backend/cpu/im2col.h"
#include "backend/cpu/kernel_list.h"
#include "backend/cpu/parallel.h"
#include "kernels/connection.h"

namespace chainerc::cpu {
namespace {

// Column buffers hold about this many elements per thread (the batch is
// chunked): small enough that the columns im2col writes are still in cache
// when the GEMM reads them (measured on the MNIST convnet: 2^16..2^17 per
// thread beat 2^22 by ~30% of the conv time), large enough for efficient GEMMs.
constexpr int64_t kColumnBudget = int64_t{1} << 17;

Conv2DGeometry geometry(const kernels::Conv2D& c) {
  Conv2DGeometry g{};
  g.c = c.c;
  g.h = c.h;
  g.w = c.w;
  g.kh = c.kh;
  g.kw = c.kw;
  g.sy = c.sy;
  g.sx = c.sx;
  g.ph = c.ph;
  g.pw = c.pw;
  g.oh = c.oh;
  g.ow = c.ow;
  return g;
}

// The batch cut into `parts` contiguous parts, one per thread, each worked
// through in chunks of up to `chunk` samples.
struct Split {
  int64_t n, parts, chunk;
  // body(part, first sample, samples) for every chunk; the parts in parallel.
  template <typename Body>
  void run(Body body) const {
    parallel_for(parts, 1, [&](int64_t p0, int64_t p1) {
      for (int64_t p = p0; p < p1; ++p)
        for (int64_t b = n * p / parts, e = n * (p + 1) / parts; b < e; b += chunk)
          body(p, b, std::min(chunk, e - b));
    });
  }
};
// With fewer samples than threads there is one part, and the steps inside
// (im2col, the GEMMs) split their own work among the threads instead.
Split split_batch(int64_t n, int64_t rows, int64_t positions) {
  const int64_t threads = num_threads();
  const int64_t parts = n >= threads ? threads : 1;
  const int64_t per = std::max<int64_t>(1, rows * positions);
  const int64_t budget = parts == 1 ? kColumnBudget * threads : kColumnBudget;
  return Split{n, parts, std::max<int64_t>(1, std::min((n + parts - 1) / parts, budget / per))};
}

void conv2d_forward(const Array& x, const Array& W, const Array& b, const kernels::Conv2D& c,
                    Array& y) {
  const Conv2DGeometry g = geometry(c);
  const int64_t N = x.shape()[0], O = W.shape()[0], P = g.positions(), rows = g.rows();
  const Split split = split_batch(N, rows, P);
  dispatch_floating(x.dtype(), "convolution_2d", [&](auto t) {
    using T = decltype(t);
    const T* px = x.data<T>();
    const T* pw = W.data<T>();
    const T* pb = b.defined() ? b.data<T>() : nullptr;
    T* py = y.data<T>();
    const int64_t col_size = rows * split.chunk * P, tmp_size = O * split.chunk * P;
    Array col = Array::empty(x.dtype(), Shape{split.parts * col_size}, x.device());
    Array tmp = Array::empty(x.dtype(), Shape{split.parts * tmp_size}, x.device());
    split.run([&](int64_t part, int64_t n0, int64_t nc) {
      T* pcol = col.data<T>() + part * col_size;
      T* ptmp = tmp.data<T>() + part * tmp_size;
      const int64_t ld = nc * P;
      im2col(px, g, n0, nc, pcol);
      gemm(false, false, O, ld, rows, T(1), pw, rows, pcol, ld, T(0), ptmp, ld);
      for (int64_t n = 0; n < nc; ++n)
        for (int64_t o = 0; o < O; ++o) {
          const T* src = ptmp + o * ld + n * P;
          T* dst = py + ((n0 + n) * O + o) * P;
          const T bias = pb ? pb[o] : T(0);
          for (int64_t p = 0; p < P; ++p) dst[p] = src[p] + bias;
        }
    });
  });
}

void conv2d_backward(const Array& x, const Array& W, const Array& gy, const kernels::Conv2D& c,
                     Array& gW, Array& gb, Array& gx) {
  const Conv2DGeometry g = geometry(c);
  const int64_t N = x.shape()[0], O = W.shape()[0], P = g.positions(), rows = g.rows();
  const Split split = split_batch(N, rows, P);
  dispatch_floating(x.dtype(), "convolution_2d", [&](auto t) {
    using T = decltype(t);
    const T* px = x.data<T>();
    const T* pgy = gy.data<T>();
    const T* pw = W.data<T>();
    T* pgw = gW.data<T>();
    T* pgb = gb.defined() ? gb.data<T>() : nullptr;
    T* pgx = gx.defined() ? gx.data<T>() : nullptr;
    const int64_t col_size = rows * split.chunk * P, gmat_size = O * split.chunk * P;
    Array col = Array::empty(x.dtype(), Shape{split.parts * col_size}, x.device());
    Array gmat = Array::empty(x.dtype(), Shape{split.parts * gmat_size}, x.device());
    // Gradient buffers of parts 1.. (part 0 writes the parameters' own).
    const int64_t wsize = O * rows, extra = split.parts - 1;
    Array gw_parts = Array::zeros(x.dtype(), Shape{extra * wsize}, x.device());
    Array gb_parts = Array::zeros(x.dtype(), Shape{extra * O}, x.device());
    split.run([&](int64_t part, int64_t n0, int64_t nc) {
      T* pcol = col.data<T>() + part * col_size;
      T* pg = gmat.data<T>() + part * gmat_size;
      T* gw = part == 0 ? pgw : gw_parts.data<T>() + (part - 1) * wsize;
      T* gbp = part == 0 ? pgb : pgb ? gb_parts.data<T>() + (part - 1) * O : nullptr;
      const int64_t ld = nc * P;
      // gy of the chunk as an (O, nc * P) matrix; gb += its row sums.
      for (int64_t o = 0; o < O; ++o) {
        double sum = 0;
        for (int64_t n = 0; n < nc; ++n) {
          const T* src = pgy + ((n0 + n) * O + o) * P;
          T* dst = pg + o * ld + n * P;
          T partial = 0;
          for (int64_t p = 0; p < P; ++p) {
            dst[p] = src[p];
            partial += src[p];
          }
          sum += partial;
        }
        if (gbp) gbp[o] += static_cast<T>(sum);
      }
      im2col(px, g, n0, nc, pcol);
      gemm(false, true, O, rows, ld, T(1), pg, ld, pcol, ld, T(1), gw, rows);
      if (!pgx) return;
      gemm(true, false, rows, ld, O, T(1), pw, rows, pg, ld, T(0), pcol, ld);
      col2im_add(pcol, g, n0, nc, pgx);
    });
    for (int64_t p = 0; p < extra; ++p) {
      const T* gwp = gw_parts.data<T>() + p * wsize;
      for (int64_t i = 0; i < wsize; ++i) pgw[i] += gwp[i];
      if (!pgb) continue;
      const T* gbp = gb_parts.data<T>() + p * O;
      for (int64_t o = 0; o < O; ++o) pgb[o] += gbp[o];
    }
  });
}

}  // namespace

void register_convolution_2d_kernels() {
  kernels::conv2d_forward.set(CH_DEVICE_CPU, conv2d_forward);
  kernels::conv2d_backward.set(CH_DEVICE_CPU, conv2d_backward);
}

}  // namespace chainerc::cpu
