// Convolution2D: y[n, o] = sum_c W[o, c] (*) x[n, c] + b[o] (correlation) on
// NCHW arrays, with stride and zero padding, as Chainer 1.0.1's
// chainer.functions.Convolution2D.
//
// CPU algorithm: the batch is cut into one part per thread, and each thread
// works through its part alone (one fork-join per call: handing every small
// step to the pool made two threads slower than one). Within a part, chunks
// of samples are unfolded by im2col into one column matrix (C*kh*kw rows,
// chunk*oh*ow columns), multiplied by one GEMM (W (O, C*kh*kw) x col) and
// scattered into NCHW with the bias added. Backward recomputes the columns
// (cheaper than keeping them) and does, per chunk, gW += gy_mat x col^T,
// gcol = W^T x gy_mat and col2im into gx. Part 0 accumulates into the
// parameter gradients directly, the others into their own buffers, added in
// part order afterwards: the same sums for a given thread count, no races.
#include <algorithm>
#include <cmath>

#include "backend/cpu/gemm.h"
#include "backend/cpu/im2col.h"
#include "backend/cpu/parallel.h"
#include "core/random.h"
#include "ops/op_util.h"
#include "ops/ops.h"

namespace chainerc::ops {
namespace {

// Column buffers hold about this many elements per thread (the batch is
// chunked): small enough that the columns im2col writes are still in cache
// when the GEMM reads them (measured on the MNIST convnet: 2^16..2^17 per
// thread beat 2^22 by ~30% of the conv time), large enough for efficient GEMMs.
constexpr int64_t kColumnBudget = int64_t{1} << 17;

struct ConvConfig {
  int64_t in, out, kh, kw, sy, sx, ph, pw;
  bool nobias;
};

class Convolution2D final : public Function {
 public:
  // Reads W and b at parameters[offset] and [offset + 1] (composites such as
  // Inception keep several convolutions' parameters in one list).
  Convolution2D(const ConvConfig& c, std::shared_ptr<Parameters> p, size_t offset = 0)
      : c_(c), offset_(offset) {
    parameters = std::move(p);
  }
  const char* name() const override { return "Convolution2D"; }
  FuncPtr clone() const override {
    return std::make_shared<Convolution2D>(c_, parameters, offset_);
  }
  FuncPtr rebind(std::shared_ptr<Parameters> p, size_t offset) const {
    return std::make_shared<Convolution2D>(c_, std::move(p), offset);
  }

  Arrays forward(const Arrays& in) override {
    const Array& x = check_input(in);
    const Array& W = (*parameters)[offset_].param;
    const cpu::Conv2DGeometry g = geometry(x);
    const int64_t N = x.shape()[0], O = c_.out, P = g.positions(), rows = g.rows();
    Array y = Array::empty(x.dtype(), Shape{N, O, g.oh, g.ow}, x.device());
    const Split split = split_batch(N, rows, P);
    dispatch_floating(x.dtype(), "convolution_2d", [&](auto t) {
      using T = decltype(t);
      const T* px = x.data<T>();
      const T* pw = W.data<T>();
      const T* pb = c_.nobias ? nullptr : (*parameters)[offset_ + 1].param.data<T>();
      T* py = y.data<T>();
      const int64_t col_size = rows * split.chunk * P, tmp_size = O * split.chunk * P;
      Array col = Array::empty(x.dtype(), Shape{split.parts * col_size}, x.device());
      Array tmp = Array::empty(x.dtype(), Shape{split.parts * tmp_size}, x.device());
      split.run([&](int64_t part, int64_t n0, int64_t nc) {
        T* pcol = col.data<T>() + part * col_size;
        T* ptmp = tmp.data<T>() + part * tmp_size;
        const int64_t ld = nc * P;
        cpu::im2col(px, g, n0, nc, pcol);
        cpu::gemm(false, false, O, ld, rows, T(1), pw, rows, pcol, ld, T(0), ptmp, ld);
        for (int64_t n = 0; n < nc; ++n)
          for (int64_t o = 0; o < O; ++o) {
            const T* src = ptmp + o * ld + n * P;
            T* dst = py + ((n0 + n) * O + o) * P;
            const T bias = pb ? pb[o] : T(0);
            for (int64_t p = 0; p < P; ++p) dst[p] = src[p] + bias;
          }
      });
    });
    return {y};
  }

  Arrays backward(const Arrays& in, const Arrays& gys) override {
    const Array& x = in[0];
    const Array& gy = gys[0];
    Parameter& Wp = (*parameters)[offset_];
    const cpu::Conv2DGeometry g = geometry(x);
    const int64_t N = x.shape()[0], O = c_.out, P = g.positions(), rows = g.rows();
    if (Wp.param.dtype() != x.dtype() || Wp.grad.dtype() != x.dtype())
      fail(CH_ERR_DTYPE, "convolution_2d: W changed dtype between forward and backward");
    const bool want_gx = needs_input_grad(0);  // not for data (requires_grad 0)
    Array gx = want_gx ? Array::zeros_like(x) : Array();
    const Split split = split_batch(N, rows, P);
    dispatch_floating(x.dtype(), "convolution_2d", [&](auto t) {
      using T = decltype(t);
      const T* px = x.data<T>();
      const T* pgy = gy.data<T>();
      const T* pw = Wp.param.data<T>();
      T* pgw = Wp.grad.data<T>();
      T* pgb = c_.nobias ? nullptr : (*parameters)[offset_ + 1].grad.data<T>();
      T* pgx = want_gx ? gx.data<T>() : nullptr;
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
        T* gb = part == 0 ? pgb : pgb ? gb_parts.data<T>() + (part - 1) * O : nullptr;
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
          if (gb) gb[o] += static_cast<T>(sum);
        }
        cpu::im2col(px, g, n0, nc, pcol);
        cpu::gemm(false, true, O, rows, ld, T(1), pg, ld, pcol, ld, T(1), gw, rows);
        if (!pgx) return;
        cpu::gemm(true, false, rows, ld, O, T(1), pw, rows, pg, ld, T(0), pcol, ld);
        cpu::col2im_add(pcol, g, n0, nc, pgx);
      });
      for (int64_t p = 0; p < extra; ++p) {
        const T* gw = gw_parts.data<T>() + p * wsize;
        for (int64_t i = 0; i < wsize; ++i) pgw[i] += gw[i];
        if (!pgb) continue;
        const T* gb = gb_parts.data<T>() + p * O;
        for (int64_t o = 0; o < O; ++o) pgb[o] += gb[o];
      }
    });
    return {gx};
  }

 private:
  const Array& check_input(const Arrays& in) const {
    if (in.size() != 1)
      fail(CH_ERR_INVALID_ARGUMENT, "convolution_2d: takes 1 input, got ", in.size());
    const Array& x = in[0];
    check_float("convolution_2d", x);
    if (x.ndim() != 4)
      fail(CH_ERR_SHAPE, "convolution_2d: x must be 4-d (batch, channels, height, width); got a ",
           x.describe());
    const Array& W = (*parameters)[offset_].param;
    if (x.dtype() != W.dtype())
      fail(CH_ERR_DTYPE, "convolution_2d: x is ", dtype_name(x.dtype()), " but W is ",
           dtype_name(W.dtype()));
    if (x.shape()[1] != c_.in)
      fail(CH_ERR_SHAPE, "convolution_2d: x has ", x.shape()[1], " channels (shape ",
           x.shape().to_string(), ") but the function has in_channels ", c_.in);
    return x;
  }

  cpu::Conv2DGeometry geometry(const Array& x) const {
    cpu::Conv2DGeometry g{};
    g.c = c_.in;
    g.h = x.shape()[2];
    g.w = x.shape()[3];
    g.kh = c_.kh;
    g.kw = c_.kw;
    g.sy = c_.sy;
    g.sx = c_.sx;
    g.ph = c_.ph;
    g.pw = c_.pw;
    const int64_t hh = g.h + 2 * g.ph - g.kh, ww = g.w + 2 * g.pw - g.kw;
    if (hh < 0 || ww < 0)
      fail(CH_ERR_SHAPE, "convolution_2d: the ", c_.kh, "x", c_.kw,
           " kernel is larger than the padded ", g.h, "x", g.w, " input (pad ", c_.ph, ", ", c_.pw,
           ")");
    g.oh = hh / g.sy + 1;
    g.ow = ww / g.sx + 1;
    return g;
  }

  // The batch cut into `parts` contiguous parts, one per thread, each worked
  // through in chunks of up to `chunk` samples.
  struct Split {
    int64_t n, parts, chunk;
    // body(part, first sample, samples) for every chunk; the parts in parallel.
    template <typename Body>
    void run(Body body) const {
      cpu::parallel_for(parts, 1, [&](int64_t p0, int64_t p1) {
        for (int64_t p = p0; p < p1; ++p)
          for (int64_t b = n * p / parts, e = n * (p + 1) / parts; b < e; b += chunk)
            body(p, b, std::min(chunk, e - b));
      });
    }
  };
  // With fewer samples than threads there is one part, and the steps inside
  // (im2col, the GEMMs) split their own work among the threads instead.
  static Split split_batch(int64_t n, int64_t rows, int64_t positions) {
    const int64_t threads = cpu::num_threads();
    const int64_t parts = n >= threads ? threads : 1;
    const int64_t per = std::max<int64_t>(1, rows * positions);
    const int64_t budget = parts == 1 ? kColumnBudget * threads : kColumnBudget;
    return Split{n, parts, std::max<int64_t>(1, std::min((n + parts - 1) / parts, budget / per))};
  }

  ConvConfig c_;
  size_t offset_;
};

}  // namespace

Array initial_parameter(const Array* init, DType dtype, const Shape& shape, const char* who,
                        const char* what) {
  Array a = Array::empty(dtype, shape);
  if (!init) return a;
  if (!init->defined() || init->shape() != shape)
    fail(CH_ERR_SHAPE, who, ": initial ", what, " is a ",
         init->defined() ? init->describe() : std::string("undefined array"), "; shape ",
         shape.to_string(), " expected");
  cpu::require_cpu(*init, who);
  dispatch_floating(dtype, who, [&](auto t) {
    using T = decltype(t);
    T* p = a.data<T>();
    for (int64_t i = 0, n = a.size(); i < n; ++i) p[i] = static_cast<T>(init->get(i));
  });
  return a;
}

FuncPtr convolution_2d_rebind(const FuncPtr& conv, std::shared_ptr<Parameters> params,
                              size_t offset) {
  auto* c = dynamic_cast<const Convolution2D*>(conv.get());
  if (!c)
    fail(CH_ERR_INTERNAL, "convolution_2d_rebind: '", conv->name(), "' is not a Convolution2D");
  return c->rebind(std::move(params), offset);
}

FuncPtr convolution_2d_new(int64_t in_channels, int64_t out_channels, int64_t kh, int64_t kw,
                           int64_t sy, int64_t sx, int64_t ph, int64_t pw, DType dtype,
                           double wscale, double bias, bool nobias, const Array* initial_W,
                           const Array* initial_b) {
  const char* who = "convolution_2d";
  if (in_channels <= 0 || out_channels <= 0)
    fail(CH_ERR_INVALID_ARGUMENT, who, ": in_channels ", in_channels, " and out_channels ",
         out_channels, " must be positive");
  if (kh <= 0 || kw <= 0)
    fail(CH_ERR_INVALID_ARGUMENT, who, ": ksize (", kh, ", ", kw, ") must be positive");
  if (sy <= 0 || sx <= 0)
    fail(CH_ERR_INVALID_ARGUMENT, who, ": stride (", sy, ", ", sx, ") must be positive");
  if (ph < 0 || pw < 0)
    fail(CH_ERR_INVALID_ARGUMENT, who, ": pad (", ph, ", ", pw, ") must not be negative");
  if (!is_floating(dtype))
    fail(CH_ERR_DTYPE, who, ": dtype ", dtype_name(dtype),
         " is not supported (float32 or float64)");
  auto params = std::make_shared<Parameters>();
  const Shape ws{out_channels, in_channels, kh, kw};
  Array W = initial_parameter(initial_W, dtype, ws, who, "W");
  if (!initial_W)
    random::fill_normal(W, 0.0,
                        wscale * std::sqrt(1.0 / static_cast<double>(in_channels * kh * kw)));
  params->push_back(Parameter{"W", W, Array::zeros(dtype, ws)});
  if (!nobias) {
    Array b = initial_parameter(initial_b, dtype, Shape{out_channels}, who, "b");
    if (!initial_b) b.fill(bias);
    params->push_back(Parameter{"b", b, Array::zeros(dtype, Shape{out_channels})});
  }
  ConvConfig c{in_channels, out_channels, kh, kw, sy, sx, ph, pw, nobias};
  return std::make_shared<Convolution2D>(c, std::move(params));
}

}  // namespace chainerc::ops
