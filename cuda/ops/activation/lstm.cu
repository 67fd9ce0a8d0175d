// CUDA kernels of the LSTM cell: every gate of a unit in one kernel, a thread
// per element of c (k = (n, u, r), reading x[n, 4u + gate, r]); the math is
// the functors of kernels/pointwise/activation.h (Tanh, Sigmoid, LstmCell,
// LstmOutput, LstmGrad). The backward pass recomputes the gates from x.
#include "cuda/ops/elementwise.cuh"
#include "cuda/ops/kernel_list.h"
#include "kernels/activation.h"
#include "kernels/pointwise/activation.h"

namespace chainerc::cuda {
namespace {

// The activated gates of element k and its tanh(c): r_inner is the product
// of the extents after axis 1.
template <typename T>
struct Gates {
  T a, i, f, o, c, c_tanh;
  __device__ Gates(const T* __restrict__ x, const T* __restrict__ c_prev, int64_t r_inner,
                   int64_t k) {
    const pointwise::Tanh tanh_f;
    const pointwise::Sigmoid sigmoid_f;
    const T* g = x + (k / r_inner) * 4 * r_inner + k % r_inner;
    a = tanh_f(g[0]);
    i = sigmoid_f(g[r_inner]);
    f = sigmoid_f(g[2 * r_inner]);
    o = sigmoid_f(g[3 * r_inner]);
    c = pointwise::LstmCell{}(a, i, f, c_prev[k]);
    c_tanh = tanh_f(c);
  }
};

template <typename T>
__global__ void lstm_forward_kernel(const T* __restrict__ c_prev, const T* __restrict__ x,
                                    T* __restrict__ c, T* __restrict__ h, int64_t r_inner,
                                    int64_t n) {
  const pointwise::LstmOutput output;
  for (int64_t k = grid_start(); k < n; k += grid_step()) {
    const Gates<T> g(x, c_prev, r_inner, k);
    c[k] = g.c;
    h[k] = output(g.o, g.c_tanh);
  }
}

template <typename T>
__global__ void lstm_backward_kernel(const T* __restrict__ c_prev, const T* __restrict__ x,
                                     const T* __restrict__ gc, const T* __restrict__ gh,
                                     T* __restrict__ gc_prev, T* __restrict__ gx, int64_t r_inner,
                                     int64_t n) {
  const pointwise::LstmGrad grad;
  for (int64_t k = grid_start(); k < n; k += grid_step()) {
    const Gates<T> g(x, c_prev, r_inner, k);
    T* og = gx + (k / r_inner) * 4 * r_inner + k % r_inner;
    grad(g.a, g.i, g.f, g.o, c_prev[k], g.c_tanh, gc[k], gh[k], gc_prev[k], og[0], og[r_inner],
         og[2 * r_inner], og[3 * r_inner]);
  }
}

// Product of the extents after axis 1 (1 for 2-d inputs).
int64_t inner_size(const Array& a) {
  int64_t r = 1;
  for (int32_t d = 2; d < a.ndim(); ++d) r *= a.shape()[d];
  return r;
}

void lstm_kernel(const Array& c_prev, const Array& x, Array& c, Array& h) {
  DeviceGuard guard(x.device().index);
  dispatch_floating(x.dtype(), "lstm", [&](auto t) {
    using T = decltype(t);
    launch_elementwise("lstm", c_prev.size(), lstm_forward_kernel<T>, c_prev.data<T>(), x.data<T>(),
                       c.data<T>(), h.data<T>(), inner_size(c_prev), c_prev.size());
  });
}

void lstm_grad_kernel(const Array& c_prev, const Array& x, const Array& gc, const Array& gh,
                      Array& gc_prev, Array& gx) {
  DeviceGuard guard(x.device().index);
  dispatch_floating(x.dtype(), "lstm", [&](auto t) {
    using T = decltype(t);
    launch_elementwise("lstm backward", c_prev.size(), lstm_backward_kernel<T>, c_prev.data<T>(),
                       x.data<T>(), gc.data<T>(), gh.data<T>(), gc_prev.data<T>(), gx.data<T>(),
                       inner_size(c_prev), c_prev.size());
  });
}

}  // namespace

void register_lstm_kernels() {
  kernels::lstm.set(CH_DEVICE_CUDA, lstm_kernel);
  kernels::lstm_grad.set(CH_DEVICE_CUDA, lstm_grad_kernel);
}

}  // namespace chainerc::cuda
