// lstm: Long Short-Term Memory units as an activation function, the seed's
// chainer.functions.lstm(c_prev, x) -> (c, h):
//   c = tanh(a) * sigmoid(i) + c_prev * sigmoid(f),  h = tanh(c) * sigmoid(o).
// c_prev has shape (N, U, ...) and x (N, 4U, ...). The seed says x "is split
// along the second dimension into four arrays a, i, f, o"; Chainer 1.0.1's
// code does this with x.reshape(N, U, 4, ...) and takes [:, :, k], so the
// gates are INTERLEAVED along axis 1: a = x[:, 0::4], i = x[:, 1::4],
// f = x[:, 2::4], o = x[:, 3::4]. That is what is implemented here, so
// weights trained with Chainer give the same results.
// Backward recomputes the gates from the inputs (nothing is kept); a missing
// gradient of c or h arrives as zeros.
#include <algorithm>
#include <cmath>

#include "backend/cpu/parallel.h"
#include "backend/cpu/vector_math.h"
#include "ops/op_util.h"
#include "ops/ops.h"

namespace chainerc::ops {
namespace {

constexpr const char* kWho = "lstm";

// Elements per block: the gates of a block are gathered into small buffers
// so that tanh and sigmoid run as vectorised calls over each.
constexpr int64_t kBlock = 256;

// a = tanh(x_a), i, f, o = sigmoid(x_i, x_f, x_o), c = a i + f c_prev and
// tanh(c) for the elements [k0, k0 + m) of c (m <= kBlock); x[n, 4u + gate, r]
// is read for k = (n, u, r).
template <typename T>
struct Gates {
  T a[kBlock], i[kBlock], f[kBlock], o[kBlock], c[kBlock], c_tanh[kBlock];

  void compute(const T* x, const T* c_prev, int64_t R, int64_t k0, int64_t m) {
    for (int64_t j = 0; j < m; ++j) {
      const int64_t k = k0 + j, nu = k / R, r = k % R;
      const T* g = x + nu * 4 * R + r;
      a[j] = g[0];
      i[j] = g[R];
      f[j] = g[2 * R];
      o[j] = g[3 * R];
    }
    cpu::vector_tanh(a, a, m);
    cpu::vector_sigmoid(i, i, m);
    cpu::vector_sigmoid(f, f, m);
    cpu::vector_sigmoid(o, o, m);
    for (int64_t j = 0; j < m; ++j) c[j] = a[j] * i[j] + f[j] * c_prev[k0 + j];
    cpu::vector_tanh(c, c_tanh, m);
  }
};

class LSTM final : public Function {
 public:
  const char* name() const override { return "LSTM"; }

  Arrays forward(const Arrays& in) override {
    const Array& c_prev = in[0];
    const Array& x = in[1];
    check_float_pair(kWho, c_prev, x);
    if (c_prev.ndim() < 2 || x.ndim() != c_prev.ndim())
      fail(CH_ERR_SHAPE, kWho, ": c_prev ", c_prev.shape().to_string(), " and x ",
           x.shape().to_string(), " must have the same number (>= 2) of dimensions");
    bool ok = x.shape()[0] == c_prev.shape()[0] && x.shape()[1] == 4 * c_prev.shape()[1];
    for (int32_t d = 2; d < x.ndim(); ++d) ok = ok && x.shape()[d] == c_prev.shape()[d];
    if (!ok)
      fail(CH_ERR_SHAPE, kWho, ": x ", x.shape().to_string(), " must be c_prev ",
           c_prev.shape().to_string(), " with four times the units (axis 1)");
    Array c = Array::empty_like(c_prev), h = Array::empty_like(c_prev);
    dispatch_floating(x.dtype(), kWho, [&](auto t) {
      using T = decltype(t);
      const T* pc = c_prev.data<T>();
      const T* px = x.data<T>();
      T* oc = c.data<T>();
      T* oh = h.data<T>();
      const int64_t R = inner_size(c_prev);
      cpu::parallel_for(c_prev.size(), cpu::kElementwiseGrain / 8, [&](int64_t b, int64_t e) {
        Gates<T> gates;
        for (int64_t k0 = b; k0 < e; k0 += kBlock) {
          const int64_t m = std::min(kBlock, e - k0);
          gates.compute(px, pc, R, k0, m);
          std::copy(gates.c, gates.c + m, oc + k0);
          for (int64_t j = 0; j < m; ++j) oh[k0 + j] = gates.o[j] * gates.c_tanh[j];
        }
      });
    });
    return {c, h};
  }

  Arrays backward(const Arrays& in, const Arrays& gy) override {
    const Array& c_prev = in[0];
    const Array& x = in[1];
    Array gc_prev = Array::empty_like(c_prev), gx = Array::empty_like(x);
    dispatch_floating(x.dtype(), kWho, [&](auto t) {
      using T = decltype(t);
      const T* pc = c_prev.data<T>();
      const T* px = x.data<T>();
      const T* gc = gy[0].data<T>();
      const T* gh = gy[1].data<T>();
      T* ogc = gc_prev.data<T>();
      T* ogx = gx.data<T>();
      const int64_t R = inner_size(c_prev);
      cpu::parallel_for(c_prev.size(), cpu::kElementwiseGrain / 16, [&](int64_t b, int64_t e) {
        Gates<T> gates;
        for (int64_t k0 = b; k0 < e; k0 += kBlock) {
          const int64_t m = std::min(kBlock, e - k0);
          gates.compute(px, pc, R, k0, m);
          const T* co = gates.c_tanh;
          for (int64_t j = 0; j < m; ++j) {
            const int64_t k = k0 + j, nu = k / R, r = k % R;
            T* og = ogx + nu * 4 * R + r;
            const T a = gates.a[j], i = gates.i[j], f = gates.f[j], o = gates.o[j];
            const T gct = gh[k] * o * (T(1) - co[j] * co[j]) + gc[k];  // total gradient of c
            ogc[k] = gct * f;
            og[0] = gct * i * (T(1) - a * a);
            og[R] = gct * a * i * (T(1) - i);
            og[2 * R] = gct * pc[k] * f * (T(1) - f);
            og[3 * R] = gh[k] * co[j] * o * (T(1) - o);
          }
        }
      });
    });
    return {gc_prev, gx};
  }

 private:
  // Product of the extents after axis 1 (1 for 2-d inputs).
  static int64_t inner_size(const Array& a) {
    int64_t r = 1;
    for (int32_t d = 2; d < a.ndim(); ++d) r *= a.shape()[d];
    return r;
  }
};

}  // namespace

std::vector<VarPtr> lstm(const VarPtr& c_prev, const VarPtr& x) {
  return apply_function(std::make_shared<LSTM>(), {c_prev, x});
}

}  // namespace chainerc::ops
