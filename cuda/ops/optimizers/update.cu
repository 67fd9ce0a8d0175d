// CUDA kernels of the optimizers' update rules (SGD, MomentumSGD, AdaGrad,
// AdaDelta, Adam, AdamW, AMSGrad, RMSprop, NesterovAG): the rules of
// kernels/pointwise/optimizers.h, made once on the host from the step's hyperparameters, applied to
// every element of a parameter, its gradient and its state arrays in place, in 16-byte packs where
// every array is 16-byte aligned.
#include "cuda/ops/elementwise.cuh"
#include "cuda/ops/kernel_list.h"
#include "kernels/optimizers.h"

namespace chainerc::cuda {
namespace {

// Packs of V elements where every pointer is 16-byte aligned (V = 1: one
// element at a time; see Pack in cuda/ops/elementwise.cuh), the n % V
// trailing elements one at a time.
template <typename Rule, typename T, int V>
__global__ void update_kernel0(Rule rule, T* __restrict__ p, const T* __restrict__ g, int64_t n) {
  const int64_t packs = n / V;
  for (int64_t k = grid_start(); k < packs; k += grid_step()) {
    Pack<T, V> pp = load_pack<V>(p, k);
    const Pack<T, V> pg = load_pack<V>(g, k);
    CH_UNROLL
    for (int j = 0; j < V; ++j) rule(pp.v[j], pg.v[j]);
    store_pack<V>(p, k, pp);
  }
  for (int64_t i = packs * V + grid_start(); i < n; i += grid_step()) rule(p[i], g[i]);
}
template <typename Rule, typename T, int V>
__global__ void update_kernel1(Rule rule, T* __restrict__ p, const T* __restrict__ g,
                               T* __restrict__ s0, int64_t n) {
  const int64_t packs = n / V;
  for (int64_t k = grid_start(); k < packs; k += grid_step()) {
    Pack<T, V> pp = load_pack<V>(p, k), p0 = load_pack<V>(s0, k);
    const Pack<T, V> pg = load_pack<V>(g, k);
    CH_UNROLL
    for (int j = 0; j < V; ++j) rule(pp.v[j], pg.v[j], p0.v[j]);
    store_pack<V>(p, k, pp);
    store_pack<V>(s0, k, p0);
  }
  for (int64_t i = packs * V + grid_start(); i < n; i += grid_step()) rule(p[i], g[i], s0[i]);
}
template <typename Rule, typename T, int V>
__global__ void update_kernel2(Rule rule, T* __restrict__ p, const T* __restrict__ g,
                               T* __restrict__ s0, T* __restrict__ s1, int64_t n) {
  const int64_t packs = n / V;
  for (int64_t k = grid_start(); k < packs; k += grid_step()) {
    Pack<T, V> pp = load_pack<V>(p, k), p0 = load_pack<V>(s0, k), p1 = load_pack<V>(s1, k);
    const Pack<T, V> pg = load_pack<V>(g, k);
    CH_UNROLL
    for (int j = 0; j < V; ++j) rule(pp.v[j], pg.v[j], p0.v[j], p1.v[j]);
    store_pack<V>(p, k, pp);
    store_pack<V>(s0, k, p0);
    store_pack<V>(s1, k, p1);
  }
  for (int64_t i = packs * V + grid_start(); i < n; i += grid_step())
    rule(p[i], g[i], s0[i], s1[i]);
}

template <typename Rule, typename T, int V>
__global__ void update_kernel3(Rule rule, T* __restrict__ p, const T* __restrict__ g,
                               T* __restrict__ s0, T* __restrict__ s1, T* __restrict__ s2,
                               int64_t n) {
  const int64_t packs = n / V;
  for (int64_t k = grid_start(); k < packs; k += grid_step()) {
    Pack<T, V> pp = load_pack<V>(p, k), p0 = load_pack<V>(s0, k), p1 = load_pack<V>(s1, k),
               p2 = load_pack<V>(s2, k);
    const Pack<T, V> pg = load_pack<V>(g, k);
    CH_UNROLL
    for (int j = 0; j < V; ++j) rule(pp.v[j], pg.v[j], p0.v[j], p1.v[j], p2.v[j]);
    store_pack<V>(p, k, pp);
    store_pack<V>(s0, k, p0);
    store_pack<V>(s1, k, p1);
    store_pack<V>(s2, k, p2);
  }
  for (int64_t i = packs * V + grid_start(); i < n; i += grid_step())
    rule(p[i], g[i], s0[i], s1[i], s2[i]);
}

// rule(param[i], grad[i], state[i]...) for every i on param's device, with
// rule = Rule<T>(hp) for the parameter's dtype T.
template <template <typename> class Rule, typename Hyper, typename... State>
void update(const char* name, const Hyper& hp, Array& param, const Array& grad, State&... state) {
  DeviceGuard guard(param.device().index);
  dispatch_floating(param.dtype(), name, [&](auto tag) {
    using T = decltype(tag);
    const Rule<T> rule(hp);
    const int64_t n = param.size();
    dispatch_vector_width<T>({param.raw(), grad.raw(), state.raw()...}, [&](auto v) {
      // float64 with two state arrays (Adam, AdaDelta) one element at a
      // time: in pairs they need more than ptxas_budget's 64 registers.
      // Three state arrays (AMSGrad) one element at a time in either dtype.
      constexpr int V = (sizeof(T) == 8 && sizeof...(State) >= 2) || sizeof...(State) == 3
                            ? 1
                            : decltype(v)::value;
      if constexpr (sizeof...(State) == 0)
        launch_packed<V>(name, n, update_kernel0<Rule<T>, T, V>, rule, param.data<T>(),
                         grad.data<T>(), n);
      else if constexpr (sizeof...(State) == 1)
        launch_packed<V>(name, n, update_kernel1<Rule<T>, T, V>, rule, param.data<T>(),
                         grad.data<T>(), state.template data<T>()..., n);
      else if constexpr (sizeof...(State) == 2)
        launch_packed<V>(name, n, update_kernel2<Rule<T>, T, V>, rule, param.data<T>(),
                         grad.data<T>(), state.template data<T>()..., n);
      else
        launch_packed<V>(name, n, update_kernel3<Rule<T>, T, V>, rule, param.data<T>(),
                         grad.data<T>(), state.template data<T>()..., n);
    });
  });
}

void sgd_update(const kernels::SgdHyper& hp, Array& param, const Array& grad) {
  update<pointwise::SgdRule>("sgd_update", hp, param, grad);
}
void momentum_sgd_update(const kernels::MomentumSgdHyper& hp, Array& param, const Array& grad,
                         Array& v) {
  update<pointwise::MomentumSgdRule>("momentum_sgd_update", hp, param, grad, v);
}
void adagrad_update(const kernels::AdaGradHyper& hp, Array& param, const Array& grad, Array& h) {
  update<pointwise::AdaGradRule>("adagrad_update", hp, param, grad, h);
}
void adadelta_update(const kernels::AdaDeltaHyper& hp, Array& param, const Array& grad, Array& msg,
                     Array& msdx) {
  update<pointwise::AdaDeltaRule>("adadelta_update", hp, param, grad, msg, msdx);
}
void adam_update(const kernels::AdamHyper& hp, Array& param, const Array& grad, Array& m,
                 Array& v) {
  update<pointwise::AdamRule>("adam_update", hp, param, grad, m, v);
}
void rmsprop_update(const kernels::RmspropHyper& hp, Array& param, const Array& grad, Array& ms) {
  update<pointwise::RmspropRule>("rmsprop_update", hp, param, grad, ms);
}
void adamw_update(const kernels::AdamWHyper& hp, Array& param, const Array& grad, Array& m,
                  Array& v) {
  update<pointwise::AdamWRule>("adamw_update", hp, param, grad, m, v);
}
void amsgrad_update(const kernels::AdamWHyper& hp, Array& param, const Array& grad, Array& m,
                    Array& v, Array& vhat) {
  update<pointwise::AmsgradRule>("amsgrad_update", hp, param, grad, m, v, vhat);
}
void nesterov_ag_update(const kernels::NesterovAgHyper& hp, Array& param, const Array& grad,
                        Array& v) {
  update<pointwise::NesterovAgRule>("nesterov_ag_update", hp, param, grad, v);
}

}  // namespace

void register_optimizer_update_kernels() {
  constexpr int32_t gpu = CH_DEVICE_CUDA;
  kernels::sgd_update.set(gpu, sgd_update);
  kernels::momentum_sgd_update.set(gpu, momentum_sgd_update);
  kernels::adagrad_update.set(gpu, adagrad_update);
  kernels::adadelta_update.set(gpu, adadelta_update);
  kernels::adam_update.set(gpu, adam_update);
  kernels::rmsprop_update.set(gpu, rmsprop_update);
  kernels::adamw_update.set(gpu, adamw_update);
  kernels::amsgrad_update.set(gpu, amsgrad_update);
  kernels::nesterov_ag_update.set(gpu, nesterov_ag_update);
}

}  // namespace chainerc::cuda
