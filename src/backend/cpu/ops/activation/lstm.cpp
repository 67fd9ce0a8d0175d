// CPU kernels of the LSTM cell: the gates of a block of units are gathered
// into small buffers so that tanh and sigmoid run as vectorised calls (glibc's
// vector math library) over each; the cell math is the functors of
// kernels/pointwise/activation.h.
#include <algorithm>

#include "backend/cpu/kernel_list.h"
#include "backend/cpu/parallel.h"
#include "backend/cpu/vector_math.h"
#include "kernels/activation.h"
#include "kernels/pointwise/activation.h"

namespace chainerc::cpu {
namespace {

// Elements per block.
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
    vector_tanh(a, a, m);
    vector_sigmoid(i, i, m);
    vector_sigmoid(f, f, m);
    vector_sigmoid(o, o, m);
    const pointwise::LstmCell cell;
    for (int64_t j = 0; j < m; ++j) c[j] = cell(a[j], i[j], f[j], c_prev[k0 + j]);
    vector_tanh(c, c_tanh, m);
  }
};

// Product of the extents after axis 1 (1 for 2-d inputs).
int64_t inner_size(const Array& a) {
  int64_t r = 1;
  for (int32_t d = 2; d < a.ndim(); ++d) r *= a.shape()[d];
  return r;
}

void lstm_kernel(const Array& c_prev, const Array& x, Array& c, Array& h) {
  dispatch_floating(x.dtype(), "lstm", [&](auto t) {
    using T = decltype(t);
    const T* pc = c_prev.data<T>();
    const T* px = x.data<T>();
    T* oc = c.data<T>();
    T* oh = h.data<T>();
    const int64_t R = inner_size(c_prev);
    parallel_for(c_prev.size(), kElementwiseGrain / 8, [&](int64_t b, int64_t e) {
      Gates<T> gates;
      const pointwise::LstmOutput output;
      for (int64_t k0 = b; k0 < e; k0 += kBlock) {
        const int64_t m = std::min(kBlock, e - k0);
        gates.compute(px, pc, R, k0, m);
        std::copy(gates.c, gates.c + m, oc + k0);
        for (int64_t j = 0; j < m; ++j) oh[k0 + j] = output(gates.o[j], gates.c_tanh[j]);
      }
    });
  });
}

void lstm_grad_kernel(const Array& c_prev, const Array& x, const Array& gc_in, const Array& gh_in,
                      Array& gc_prev, Array& gx) {
  dispatch_floating(x.dtype(), "lstm", [&](auto t) {
    using T = decltype(t);
    const T* pc = c_prev.data<T>();
    const T* px = x.data<T>();
    const T* gc = gc_in.data<T>();
    const T* gh = gh_in.data<T>();
    T* ogc = gc_prev.data<T>();
    T* ogx = gx.data<T>();
    const int64_t R = inner_size(c_prev);
    parallel_for(c_prev.size(), kElementwiseGrain / 16, [&](int64_t b, int64_t e) {
      Gates<T> gates;
      const pointwise::LstmGrad grad;
      for (int64_t k0 = b; k0 < e; k0 += kBlock) {
        const int64_t m = std::min(kBlock, e - k0);
        gates.compute(px, pc, R, k0, m);
        for (int64_t j = 0; j < m; ++j) {
          const int64_t k = k0 + j, nu = k / R, r = k % R;
          T* og = ogx + nu * 4 * R + r;
          grad(gates.a[j], gates.i[j], gates.f[j], gates.o[j], pc[k], gates.c_tanh[j], gc[k], gh[k],
               ogc[k], og[0], og[R], og[2 * R], og[3 * R]);
        }
      }
    });
  });
}

}  // namespace

void register_lstm_kernels() {
  kernels::lstm.set(CH_DEVICE_CPU, lstm_kernel);
  kernels::lstm_grad.set(CH_DEVICE_CPU, lstm_grad_kernel);
}

}  // namespace chainerc::cpu
