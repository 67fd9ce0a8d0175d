// The CPU loop of the optimizers' update kernels: an update rule of
// kernels/pointwise/optimizers.h applied to every element of a parameter, its
// gradient and its state arrays, split over the thread pool in chunks of
// kElementwiseGrain elements.
#pragma once

#include "backend/cpu/parallel.h"
#include "backend/cpu/simd_clones.h"
#include "core/array.h"
#include "core/dtype.h"

namespace chainerc::cpu {

// rule(param[i], grad[i], state[i]...) for every i, with rule = Rule<T>(hp)
// for the parameter's dtype T (all arrays have one shape and dtype).
// One chunk, one copy per vector ISA (simd_clones.h).
template <typename Rule, typename T, typename... S>
CH_SIMD_CLONES void update_chunk(const Rule rule, T* __restrict p, const T* __restrict g, int64_t b,
                                 int64_t e, S* __restrict... s) {
  for (int64_t i = b; i < e; ++i) rule(p[i], g[i], s[i]...);
}

template <template <typename> class Rule, typename Hyper, typename... State>
void update_loop(const Hyper& hp, Array& param, const Array& grad, State&... state) {
  dispatch_floating(param.dtype(), "update", [&](auto tag) {
    using T = decltype(tag);
    const Rule<T> rule(hp);
    const int64_t n = param.size();
    T* p = param.data<T>();
    const T* g = grad.data<T>();
    auto run = [&](auto*... s) {
      parallel_for(n, kElementwiseGrain,
                   [=](int64_t b, int64_t e) { update_chunk(rule, p, g, b, e, s...); });
    };
    run(state.template data<T>()...);
  });
}

}  // namespace chainerc::cpu
