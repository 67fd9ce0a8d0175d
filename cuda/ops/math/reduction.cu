// CUDA kernels of sums and broadcasts: sum_to (sum, sum along axes, the
// gradients of broadcasting arithmetic), broadcast_to, and add_into
// (gradient accumulation on the device).
#include "cuda/ops/elementwise.cuh"
#include "cuda/ops/kernel_list.h"
#include "cuda/ops/reduce.cuh"
#include "kernels/math.h"

namespace chainerc::cuda {
namespace {

// x's axes split into those y keeps (in order: y's elements, row-major) and
// those summed away, each with x's strides.
struct SumIndex {
  BroadcastIndex kept;     // over y's elements
  BroadcastIndex reduced;  // over the elements summed into one of y's
  int64_t n_out = 1, n_reduced = 1;
};

SumIndex sum_index(const Shape& x, const Shape& y) {
  SumIndex s;
  const int32_t lead = x.ndim() - y.ndim();
  int64_t stride = 1;
  int64_t strides[CH_MAX_NDIM];
  for (int32_t d = x.ndim() - 1; d >= 0; --d) {
    strides[d] = stride;
    stride *= x[d];
  }
  for (int32_t d = 0; d < x.ndim(); ++d) {
    const bool kept = d >= lead && y[d - lead] == x[d];
    BroadcastIndex& ix = kept ? s.kept : s.reduced;
    ix.shape[ix.ndim] = x[d];
    ix.stride[ix.ndim] = strides[d];
    ++ix.ndim;
    (kept ? s.n_out : s.n_reduced) *= x[d];
  }
  return s;
}

// Few elements per output: one thread sums each output.
template <typename T>
__global__ void sum_per_thread_kernel(SumIndex s, const T* __restrict__ x, T* __restrict__ y) {
  for (int64_t j = grid_start(); j < s.n_out; j += grid_step()) {
    const T* base = x + broadcast_offset(s.kept, j);
    T acc = 0;
    for (int64_t r = 0; r < s.n_reduced; ++r) acc += base[broadcast_offset(s.reduced, r)];
    y[j] = acc;
  }
}

// Many elements per output: one block sums each output.
template <typename T>
__global__ void sum_per_block_kernel(SumIndex s, const T* __restrict__ x, T* __restrict__ y) {
  __shared__ T scratch[kBlockThreads];
  for (int64_t j = blockIdx.x; j < s.n_out; j += gridDim.x) {
    const T* base = x + broadcast_offset(s.kept, j);
    T acc = 0;
    for (int64_t r = threadIdx.x; r < s.n_reduced; r += blockDim.x)
      acc += base[broadcast_offset(s.reduced, r)];
    acc = block_sum(acc, scratch);
    if (threadIdx.x == 0) y[j] = acc;
  }
}

// Few outputs of many elements each (a full sum, a bias-like gradient): the
// elements of each output cut into `chunks` ranges, a block per (range,
// output) (grid (chunks, n_out)), the ranges' sums in partial[j * chunks + c];
// then a thread per output adds its ranges in order. So the whole device
// works on a full sum rather than one block, and the order of the additions
// depends on the shape only.
template <typename T>
__global__ void sum_chunks_kernel(SumIndex s, const T* __restrict__ x, T* __restrict__ partial,
                                  int64_t per_chunk) {
  __shared__ T scratch[kBlockThreads];
  const int64_t j = blockIdx.y, c = blockIdx.x;
  const T* base = x + broadcast_offset(s.kept, j);
  const int64_t begin = c * per_chunk;
  const int64_t end = begin + per_chunk < s.n_reduced ? begin + per_chunk : s.n_reduced;
  T acc = 0;
  for (int64_t r = begin + threadIdx.x; r < end; r += blockDim.x)
    acc += base[broadcast_offset(s.reduced, r)];
  acc = block_sum(acc, scratch);
  if (threadIdx.x == 0) partial[j * gridDim.x + c] = acc;
}

template <typename T>
__global__ void sum_chunks_finish_kernel(const T* __restrict__ partial, T* __restrict__ y,
                                         int64_t n_out, int64_t chunks) {
  for (int64_t j = grid_start(); j < n_out; j += grid_step()) {
    T acc = 0;
    for (int64_t c = 0; c < chunks; ++c) acc += partial[j * chunks + c];
    y[j] = acc;
  }
}

// Blocks a two-stage sum aims at (a few per SM of a large GPU).
constexpr int64_t kTargetBlocks = 1024;

void sum_to_kernel(const Array& x, Array& y) {
  DeviceGuard guard(x.device().index);
  const SumIndex s = sum_index(x.shape(), y.shape());
  dispatch_floating(x.dtype(), "sum_to", [&](auto t) {
    using T = decltype(t);
    if (s.n_out == 0) return;
    if (s.n_reduced == 0) {
      check(cudaMemsetAsync(y.raw(), 0, y.nbytes(), nullptr), "sum_to", "cudaMemsetAsync");
      return;
    }
    if (s.n_reduced < 4 * kBlockThreads && s.n_out >= s.n_reduced) {
      launch_elementwise("sum_to", s.n_out, sum_per_thread_kernel<T>, s, x.data<T>(), y.data<T>());
    } else if (s.n_out < kTargetBlocks / 4 && s.n_reduced >= 16 * kBlockThreads) {
      int64_t chunks = kTargetBlocks / s.n_out;
      const int64_t most = s.n_reduced / (4 * kBlockThreads);  // >= 4 elements per thread
      if (chunks > most) chunks = most;
      const int64_t per_chunk = (s.n_reduced + chunks - 1) / chunks;
      chunks = (s.n_reduced + per_chunk - 1) / per_chunk;
      Array partial = Array::empty(x.dtype(), Shape{s.n_out * chunks}, x.device());
      check_launch(launch(sum_chunks_kernel<T>,
                          dim3(static_cast<unsigned>(chunks), static_cast<unsigned>(s.n_out)),
                          kBlockThreads, 0, nullptr, s, x.data<T>(), partial.data<T>(), per_chunk),
                   "sum_to");
      launch_elementwise("sum_to", s.n_out, sum_chunks_finish_kernel<T>, partial.data<T>(),
                         y.data<T>(), s.n_out, chunks);
    } else {
      const unsigned blocks = blocks_for(s.n_out * kBlockThreads);
      check_launch(launch(sum_per_block_kernel<T>, blocks, kBlockThreads, 0, nullptr, s,
                          x.data<T>(), y.data<T>()),
                   "sum_to");
    }
  });
}

template <typename E>
__global__ void broadcast_copy_kernel(BroadcastIndex ix, const E* __restrict__ x, E* __restrict__ y,
                                      int64_t n) {
  for (int64_t i = grid_start(); i < n; i += grid_step()) y[i] = x[broadcast_offset(ix, i)];
}

// Any dtype: elements are moved as unsigned integers of their size.
void broadcast_to_kernel(const Array& x, Array& y) {
  DeviceGuard guard(x.device().index);
  const BroadcastIndex ix = broadcast_index(x.shape(), y.shape());
  if (dtype_size(x.dtype()) == 8)
    launch_elementwise("broadcast_to", y.size(), broadcast_copy_kernel<uint64_t>, ix,
                       x.data<uint64_t>(), y.data<uint64_t>(), y.size());
  else
    launch_elementwise("broadcast_to", y.size(), broadcast_copy_kernel<uint32_t>, ix,
                       x.data<uint32_t>(), y.data<uint32_t>(), y.size());
}

template <typename T>
__global__ void add_into_kernel(T* __restrict__ acc, const T* __restrict__ x, int64_t n) {
  for (int64_t i = grid_start(); i < n; i += grid_step()) acc[i] += x[i];
}

void add_into(Array& acc, const Array& x) {
  if (acc.shape() != x.shape() || acc.dtype() != x.dtype() || acc.device() != x.device())
    fail(CH_ERR_SHAPE, "cannot add ", x.describe(), " into ", acc.describe());
  DeviceGuard guard(acc.device().index);
  dispatch_floating(acc.dtype(), "add_into", [&](auto t) {
    using T = decltype(t);
    launch_elementwise("add_into", acc.size(), add_into_kernel<T>, acc.data<T>(), x.data<T>(),
                       acc.size());
  });
}

}  // namespace

void register_reduction_kernels() {
  constexpr int32_t gpu = CH_DEVICE_CUDA;
  kernels::sum_to.set(gpu, sum_to_kernel);
  kernels::broadcast_to.set(gpu, broadcast_to_kernel);
  kernels::add_into.set(gpu, add_into);
}

}  // namespace chainerc::cuda
