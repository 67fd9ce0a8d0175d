// CUDA kernels of the optimizers' update rules (SGD, MomentumSGD, AdaGrad,
// AdaDelta, Adam, RMSprop): the rules of kernels/pointwise/optimizers.h,
// made once on the host from the step's hyperparameters, applied to every
// element of a parameter, its gradient and its state arrays in place.
#include "cuda/ops/elementwise.cuh"
#include "cuda/ops/kernel_list.h"
#include "kernels/optimizers.h"

namespace chainerc::cuda {
namespace {

template <typename Rule, typename T>
__global__ void update_kernel0(Rule rule, T* __restrict__ p, const T* __restrict__ g, int64_t n) {
  for (int64_t i = grid_start(); i < n; i += grid_step()) rule(p[i], g[i]);
}
template <typename Rule, typename T>
__global__ void update_kernel1(Rule rule, T* __restrict__ p, const T* __restrict__ g,
                               T* __restrict__ s0, int64_t n) {
  for (int64_t i = grid_start(); i < n; i += grid_step()) rule(p[i], g[i], s0[i]);
}
template <typename Rule, typename T>
__global__ void update_kernel2(Rule rule, T* __restrict__ p, const T* __restrict__ g,
                               T* __restrict__ s0, T* __restrict__ s1, int64_t n) {
  for (int64_t i = grid_start(); i < n; i += grid_step()) rule(p[i], g[i], s0[i], s1[i]);
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
    if constexpr (sizeof...(State) == 0)
      launch_elementwise(name, n, update_kernel0<Rule<T>, T>, rule, param.data<T>(), grad.data<T>(),
                         n);
    else if constexpr (sizeof...(State) == 1)
      launch_elementwise(name, n, update_kernel1<Rule<T>, T>, rule, param.data<T>(), grad.data<T>(),
                         state.template data<T>()..., n);
    else
      launch_elementwise(name, n, update_kernel2<Rule<T>, T>, rule, param.data<T>(), grad.data<T>(),
                         state.template data<T>()..., n);
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

}  // namespace

void register_optimizer_update_kernels() {
  constexpr int32_t gpu = CH_DEVICE_CUDA;
  kernels::sgd_update.set(gpu, sgd_update);
  kernels::momentum_sgd_update.set(gpu, momentum_sgd_update);
  kernels::adagrad_update.set(gpu, adagrad_update);
  kernels::adadelta_update.set(gpu, adadelta_update);
  kernels::adam_update.set(gpu, adam_update);
  kernels::rmsprop_update.set(gpu, rmsprop_update);
}

}  // namespace chainerc::cuda
