// CPU kernels of the pointwise activations (relu, leaky_relu, sigmoid, tanh)
// and of PReLU: the functors of kernels/pointwise/activation.h over the CPU
// loops, except sigmoid and tanh, which go through glibc's vector math
// library (the functors stay their reference in the tests).
#include "kernels/activation.h"

#include "backend/cpu/kernel_list.h"
#include "backend/cpu/pointwise.h"
#include "backend/cpu/vector_math.h"
#include "kernels/pointwise/activation.h"

namespace chainerc::cpu {
namespace {

void sigmoid_kernel(const Array& x, Array& y) {
  vector_map(x, y, [](const auto* px, auto* py, int64_t n) { vector_sigmoid(px, py, n); });
}
void tanh_kernel(const Array& x, Array& y) {
  vector_map(x, y, [](const auto* px, auto* py, int64_t n) { vector_tanh(px, py, n); });
}

// f(offset, w, inner): the run of `inner` contiguous elements of x starting
// at `offset` that all use W's element w.
template <typename F>
void for_each_block(const Array& x, const Array& W, F f) {
  const int64_t wn = W.size();
  int64_t inner = 1;
  for (int32_t d = 1 + W.ndim(); d < x.ndim(); ++d) inner *= x.shape()[d];
  const int64_t batch = x.ndim() ? x.shape()[0] : 1;
  for (int64_t n = 0; n < batch; ++n)
    for (int64_t w = 0; w < wn; ++w) f((n * wn + w) * inner, w, inner);
}

void prelu_kernel(const Array& x, const Array& W, Array& y) {
  dispatch_floating(x.dtype(), "PReLU", [&](auto t) {
    using T = decltype(t);
    const T *px = x.data<T>(), *pw = W.data<T>();
    T* py = y.data<T>();
    const pointwise::PRelu f;
    for_each_block(x, W, [&](int64_t off, int64_t w, int64_t inner) {
      const T a = pw[w];
      for (int64_t i = off; i < off + inner; ++i) py[i] = f(px[i], a);
    });
  });
}

void prelu_grad_kernel(const Array& x, const Array& gy, const Array& W, Array& gx, Array& gW) {
  dispatch_floating(x.dtype(), "PReLU", [&](auto t) {
    using T = decltype(t);
    const T *px = x.data<T>(), *pg = gy.data<T>(), *pw = W.data<T>();
    T *pgx = gx.data<T>(), *pgw = gW.data<T>();
    const pointwise::PReluGradX fx;
    const pointwise::PReluGradA fa;
    for_each_block(x, W, [&](int64_t off, int64_t w, int64_t inner) {
      const T a = pw[w];
      T acc = 0;
      for (int64_t i = off; i < off + inner; ++i) {
        pgx[i] = fx(pg[i], px[i], a);
        acc += fa(pg[i], px[i]);
      }
      pgw[w] += acc;
    });
  });
}

}  // namespace

void register_activation_kernels() {
  using namespace pointwise;
  constexpr int32_t cpu = CH_DEVICE_CPU;
  kernels::relu.set(cpu, unary_kernel<Relu>);
  kernels::relu_grad.set(cpu, binary_kernel<ReluGrad>);
  kernels::leaky_relu.set(cpu, unary_scalar_kernel<LeakyRelu>);
  kernels::leaky_relu_grad.set(cpu, binary_scalar_kernel<LeakyReluGrad>);
  kernels::sigmoid.set(cpu, sigmoid_kernel);
  kernels::sigmoid_grad.set(cpu, binary_kernel<SigmoidGrad>);
  kernels::tanh.set(cpu, tanh_kernel);
  kernels::tanh_grad.set(cpu, binary_kernel<TanhGrad>);
  kernels::prelu.set(cpu, prelu_kernel);
  kernels::prelu_grad.set(cpu, prelu_grad_kernel);
}

}  // namespace chainerc::cpu
