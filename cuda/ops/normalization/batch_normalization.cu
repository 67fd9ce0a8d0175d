// CUDA kernels of BatchNormalization on x viewed as (L, C, R): one block per
// channel (grid-stride over the channels). The block's threads take the
// channel's L * R elements in turn, their partial sums (in double) are added
// by block_sum; thread 0 moves the running averages and the parameter
// gradients, and every thread then writes its elements through the shared
// per-element math of pointwise/normalization.h. Backward recomputes x_hat
// from x and the kept statistics.
#include <cmath>

#include "cuda/ops/elementwise.cuh"
#include "cuda/ops/kernel_list.h"
#include "cuda/ops/reduce.cuh"
#include "kernels/normalization.h"
#include "kernels/pointwise/normalization.h"

namespace chainerc::cuda {
namespace {

using kernels::BatchNorm;

// A thread's walk over the L * R elements of channel c: elements j = first,
// first + step, ... as (l, r), advanced without a division per element
// (none at all when R is 0: no elements).
struct ChannelWalk {
  int64_t l, r, step_l, step_r, row, base;
  __device__ ChannelWalk(const BatchNorm& bn, int64_t c, int64_t first, int64_t step)
      : l(bn.R > 0 ? first / bn.R : bn.L),
        r(bn.R > 0 ? first % bn.R : 0),
        step_l(bn.R > 0 ? step / bn.R : 0),
        step_r(bn.R > 0 ? step % bn.R : 0),
        row(bn.C * bn.R),
        base(c * bn.R) {}
  __device__ bool more(const BatchNorm& bn) const { return l < bn.L; }
  __device__ int64_t index() const { return l * row + base + r; }
  __device__ void next(const BatchNorm& bn) {
    l += step_l;
    r += step_r;
    if (r >= bn.R) {
      r -= bn.R;
      ++l;
    }
  }
};

template <typename T>
__global__ void batch_norm_forward_kernel(BatchNorm bn, const T* __restrict__ x,
                                          const T* __restrict__ gamma, const T* __restrict__ beta,
                                          T* __restrict__ avg_mean, T* __restrict__ avg_var,
                                          T* __restrict__ y, T* __restrict__ mean_out,
                                          T* __restrict__ inv_std_out) {
  __shared__ double scratch[kBlockThreads];
  const int64_t m = bn.L * bn.R;
  for (int64_t c = blockIdx.x; c < bn.C; c += gridDim.x) {
    double mean, var;
    if (bn.use_batch) {
      double s = 0;
      for (ChannelWalk w(bn, c, threadIdx.x, blockDim.x); w.more(bn); w.next(bn)) s += x[w.index()];
      mean = block_sum(s, scratch) / static_cast<double>(m);
      const T mu = static_cast<T>(mean);
      double v = 0;
      for (ChannelWalk w(bn, c, threadIdx.x, blockDim.x); w.more(bn); w.next(bn)) {
        const T d = x[w.index()] - mu;
        v += d * d;
      }
      var = block_sum(v, scratch) / static_cast<double>(m);
      if (threadIdx.x == 0) {
        avg_mean[c] = static_cast<T>(bn.decay * avg_mean[c] + (1 - bn.decay) * mean);
        avg_var[c] = static_cast<T>(bn.decay * avg_var[c] + (1 - bn.decay) * bn.adjust * var);
      }
    } else {
      mean = avg_mean[c];
      var = avg_var[c];
    }
    const T inv = static_cast<T>(1.0 / sqrt(var + bn.eps));
    const T mu = static_cast<T>(mean), g = gamma[c], b = beta[c];
    if (bn.use_batch && threadIdx.x == 0) {
      mean_out[c] = mu;
      inv_std_out[c] = inv;
    }
    const pointwise::BatchNormApply apply{};
    for (ChannelWalk w(bn, c, threadIdx.x, blockDim.x); w.more(bn); w.next(bn)) {
      const int64_t i = w.index();
      y[i] = apply(x[i], mu, inv, g, b);
    }
  }
}

template <typename T>
__global__ void batch_norm_backward_kernel(BatchNorm bn, const T* __restrict__ x,
                                           const T* __restrict__ gy, const T* __restrict__ mean,
                                           const T* __restrict__ stat, const T* __restrict__ gamma,
                                           T* __restrict__ ggamma, T* __restrict__ gbeta,
                                           T* __restrict__ gx) {
  __shared__ double scratch[kBlockThreads];
  const int64_t m = bn.L * bn.R;
  const pointwise::BatchNormHat hat{};
  for (int64_t c = blockIdx.x; c < bn.C; c += gridDim.x) {
    const T mu = mean[c];
    const T inv = bn.use_batch ? stat[c] : static_cast<T>(1.0 / sqrt(stat[c] + bn.eps));
    double sb = 0, sg = 0;
    for (ChannelWalk w(bn, c, threadIdx.x, blockDim.x); w.more(bn); w.next(bn)) {
      const int64_t i = w.index();
      sb += gy[i];
      sg += gy[i] * hat(x[i], mu, inv);
    }
    const double gb = block_sum(sb, scratch);
    const double gg = block_sum(sg, scratch);
    if (threadIdx.x == 0) {
      gbeta[c] += static_cast<T>(gb);
      ggamma[c] += static_cast<T>(gg);
    }
    const T coeff = gamma[c] * inv;
    if (bn.use_batch) {
      const T mg = static_cast<T>(gg / static_cast<double>(m));
      const T mb = static_cast<T>(gb / static_cast<double>(m));
      const pointwise::BatchNormGrad grad{};
      for (ChannelWalk w(bn, c, threadIdx.x, blockDim.x); w.more(bn); w.next(bn)) {
        const int64_t i = w.index();
        gx[i] = grad(gy[i], hat(x[i], mu, inv), coeff, mg, mb);
      }
    } else {
      for (ChannelWalk w(bn, c, threadIdx.x, blockDim.x); w.more(bn); w.next(bn)) {
        const int64_t i = w.index();
        gx[i] = coeff * gy[i];
      }
    }
  }
}

void batch_norm_forward(const Array& x, const Array& gamma, const Array& beta, const BatchNorm& bn,
                        Array& avg_mean, Array& avg_var, Array& y, Array& mean, Array& inv_std) {
  if (bn.C <= 0) return;
  DeviceGuard guard(x.device().index);
  dispatch_floating(x.dtype(), "batch_normalization", [&](auto t) {
    using T = decltype(t);
    check_launch(
        launch(batch_norm_forward_kernel<T>, blocks_for(bn.C * kBlockThreads), kBlockThreads, 0,
               nullptr, bn, x.data<T>(), gamma.data<T>(), beta.data<T>(), avg_mean.data<T>(),
               avg_var.data<T>(), y.data<T>(), bn.use_batch ? mean.data<T>() : nullptr,
               bn.use_batch ? inv_std.data<T>() : nullptr),
        "batch_normalization");
  });
}

void batch_norm_backward(const Array& x, const Array& gy, const Array& mean, const Array& stat,
                         const Array& gamma, const BatchNorm& bn, Array& ggamma, Array& gbeta,
                         Array& gx) {
  if (bn.C <= 0) return;
  DeviceGuard guard(gy.device().index);
  dispatch_floating(gy.dtype(), "batch_normalization", [&](auto t) {
    using T = decltype(t);
    check_launch(
        launch(batch_norm_backward_kernel<T>, blocks_for(bn.C * kBlockThreads), kBlockThreads, 0,
               nullptr, bn, x.data<T>(), gy.data<T>(), mean.data<T>(), stat.data<T>(),
               gamma.data<T>(), ggamma.data<T>(), gbeta.data<T>(), gx.data<T>()),
        "batch_normalization");
  });
}

}  // namespace

void register_batch_normalization_kernels() {
  constexpr int32_t gpu = CH_DEVICE_CUDA;
  kernels::batch_norm_forward.set(gpu, batch_norm_forward);
  kernels::batch_norm_backward.set(gpu, batch_norm_backward);
}

}  // namespace chainerc::cuda
