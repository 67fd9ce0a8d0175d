// CUDA kernels of PReLU: the functors of kernels/pointwise/activation.h.
// x is viewed as (batch, wn, inner) where wn = W.size(): the forward pass is
// element-wise; in the backward pass each of W's elements gets a thread when
// few elements use it (neighbouring threads on neighbouring elements of W),
// else blocks, one per range of its uses (about 1024 blocks in all, so that
// a W of one element is not one block's work; block_sum of each range, the
// ranges then added in order); either way gx and gW come from one pass over
// x and gy, and the order of the additions depends on the shape only.
#include "cuda/ops/elementwise.cuh"
#include "cuda/ops/kernel_list.h"
#include "cuda/ops/reduce.cuh"
#include "kernels/activation.h"
#include "kernels/pointwise/activation.h"

namespace chainerc::cuda {
namespace {

// x as (batch, wn, inner): W's element w applies to x[n, w, r].
struct PReluLayout {
  int64_t batch, wn, inner;
  FastDivider<uint64_t> by_inner, by_wn;  // division by inner and wn (cuda/ops/index.cuh)
};

PReluLayout layout_of(const Array& x, const Array& W) {
  PReluLayout l{x.ndim() ? x.shape()[0] : 1, W.size(), 1, {}, {}};
  for (int32_t d = 1 + W.ndim(); d < x.ndim(); ++d) l.inner *= x.shape()[d];
  if (l.inner > 0) l.by_inner = FastDivider<uint64_t>(static_cast<uint64_t>(l.inner));
  if (l.wn > 0) l.by_wn = FastDivider<uint64_t>(static_cast<uint64_t>(l.wn));
  return l;
}

template <typename T>
__global__ void prelu_forward_kernel(const T* __restrict__ x, const T* __restrict__ w,
                                     T* __restrict__ y, PReluLayout l, int64_t n) {
  const pointwise::PRelu f;
  for (int64_t i = grid_start(); i < n; i += grid_step()) {
    const uint64_t q = l.by_inner.div(static_cast<uint64_t>(i));
    y[i] = f(x[i], w[q - l.by_wn.div(q) * static_cast<uint64_t>(l.wn)]);
  }
}

// The element of x that the j-th use of W's element k is: x[n, k, r] with
// (n, r) = (j / inner, j % inner).
__device__ __forceinline__ int64_t prelu_index(const PReluLayout& l, int64_t k, int64_t j) {
  const int64_t q = static_cast<int64_t>(l.by_inner.div(static_cast<uint64_t>(j)));
  return (q * l.wn + k) * l.inner + (j - q * l.inner);
}

// Block (k, range blockIdx.y) handles the uses of W's element k in its range
// of per_w = batch * inner; their gW contributions summed by block_sum into
// gW[k] (one range) or partial[k * ranges + range].
template <typename T>
__global__ void prelu_backward_kernel(const T* __restrict__ x, const T* __restrict__ gy,
                                      const T* __restrict__ w, T* __restrict__ gx,
                                      T* __restrict__ gw, T* __restrict__ partial, PReluLayout l,
                                      int64_t per_chunk) {
  __shared__ T scratch[kBlockThreads];
  const pointwise::PReluGradX fx;
  const pointwise::PReluGradA fa;
  const int64_t per_w = l.batch * l.inner, k = blockIdx.x;
  const int64_t begin = static_cast<int64_t>(blockIdx.y) * per_chunk;
  const int64_t end = per_chunk < per_w - begin ? begin + per_chunk : per_w;
  const T a = w[k];
  T acc = 0;
  for (int64_t j = begin + threadIdx.x; j < end; j += blockDim.x) {
    const int64_t i = prelu_index(l, k, j);
    gx[i] = fx(gy[i], x[i], a);
    acc += fa(gy[i], x[i]);
  }
  acc = block_sum(acc, scratch);
  if (threadIdx.x == 0) {
    if (partial)
      partial[k * gridDim.y + blockIdx.y] = acc;
    else
      gw[k] += acc;
  }
}

// gW[k] += the ranges' sums of W's element k, in range order.
template <typename T>
__global__ void prelu_backward_finish_kernel(const T* __restrict__ partial, T* __restrict__ gw,
                                             int64_t wn, int64_t chunks) {
  for (int64_t k = grid_start(); k < wn; k += grid_step()) {
    T acc = 0;
    for (int64_t c = 0; c < chunks; ++c) acc += partial[k * chunks + c];
    gw[k] += acc;
  }
}

// Few elements per element of W: thread k handles W's element k.
template <typename T>
__global__ void prelu_backward_per_thread_kernel(const T* __restrict__ x, const T* __restrict__ gy,
                                                 const T* __restrict__ w, T* __restrict__ gx,
                                                 T* __restrict__ gw, PReluLayout l) {
  const pointwise::PReluGradX fx;
  const pointwise::PReluGradA fa;
  const int64_t per_w = l.batch * l.inner;
  for (int64_t k = grid_start(); k < l.wn; k += grid_step()) {
    const T a = w[k];
    T acc = 0;
    for (int64_t j = 0; j < per_w; ++j) {
      const int64_t i = prelu_index(l, k, j);
      gx[i] = fx(gy[i], x[i], a);
      acc += fa(gy[i], x[i]);
    }
    gw[k] += acc;
  }
}

// Blocks the backward aims at: a few per SM of a large GPU.
constexpr int64_t kTargetBlocks = 1024;

// Whether each element of W has few enough elements for a thread to sum them
// (a block does from 64 on).
bool per_thread(const PReluLayout& l) { return l.batch * l.inner < 64; }

void prelu_kernel(const Array& x, const Array& W, Array& y) {
  DeviceGuard guard(x.device().index);
  const PReluLayout l = layout_of(x, W);
  dispatch_floating(x.dtype(), "PReLU", [&](auto t) {
    using T = decltype(t);
    launch_elementwise("PReLU", x.size(), prelu_forward_kernel<T>, x.data<T>(), W.data<T>(),
                       y.data<T>(), l, x.size());
  });
}

void prelu_grad_kernel(const Array& x, const Array& gy, const Array& W, Array& gx, Array& gW) {
  const PReluLayout l = layout_of(x, W);
  if (l.wn == 0) return;
  DeviceGuard guard(x.device().index);
  dispatch_floating(x.dtype(), "PReLU", [&](auto t) {
    using T = decltype(t);
    if (per_thread(l)) {
      launch_elementwise("PReLU backward", l.wn, prelu_backward_per_thread_kernel<T>, x.data<T>(),
                         gy.data<T>(), W.data<T>(), gx.data<T>(), gW.data<T>(), l);
      return;
    }
    // Ranges of at least 4 elements per thread, about kTargetBlocks blocks.
    const int64_t per_w = l.batch * l.inner;
    int64_t chunks = kTargetBlocks / l.wn;
    if (chunks > per_w / (4 * kBlockThreads)) chunks = per_w / (4 * kBlockThreads);
    if (chunks < 1) chunks = 1;
    if (chunks > 65535) chunks = 65535;
    const int64_t per_chunk = (per_w + chunks - 1) / chunks;
    chunks = (per_w + per_chunk - 1) / per_chunk;
    Array partial;
    if (chunks > 1) partial = Array::empty(x.dtype(), Shape{l.wn * chunks}, x.device());
    check_launch(
        launch(prelu_backward_kernel<T>,
               dim3(static_cast<unsigned>(l.wn), static_cast<unsigned>(chunks)), kBlockThreads, 0,
               nullptr, x.data<T>(), gy.data<T>(), W.data<T>(), gx.data<T>(), gW.data<T>(),
               chunks > 1 ? partial.data<T>() : nullptr, l, per_chunk),
        "PReLU backward");
    if (chunks > 1)
      launch_elementwise("PReLU backward", l.wn, prelu_backward_finish_kernel<T>, partial.data<T>(),
                         gW.data<T>(), l.wn, chunks);
  });
}

}  // namespace

void register_prelu_kernels() {
  kernels::prelu.set(CH_DEVICE_CUDA, prelu_kernel);
  kernels::prelu_grad.set(CH_DEVICE_CUDA, prelu_grad_kernel);
}

}  // namespace chainerc::cuda
