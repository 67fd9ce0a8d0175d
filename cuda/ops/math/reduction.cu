// CUDA kernels of sums and broadcasts: sum_to (sum, sum along axes, the
// gradients of broadcasting arithmetic), broadcast_to, and add_into
// (gradient accumulation on the device).
#include "cuda/ops/elementwise.cuh"
#include "cuda/ops/kernel_list.h"
#include "cuda/ops/reduce.cuh"
#include "kernels/math.h"
#include "kernels/pointwise/arithmetic.h"

namespace chainerc::cuda {
namespace {

// x's axes split into those y keeps (in order: y's elements, row-major) and
// those summed away, each with x's strides; offsets through OffsetCalc
// (cuda/ops/index.cuh) in index type U.
template <typename U>
struct SumIndex {
  OffsetCalc<U, 1> kept;     // over y's elements
  OffsetCalc<U, 1> reduced;  // over the elements summed into one of y's
  U n_out = 1, n_reduced = 1;
};

template <typename U>
SumIndex<U> sum_index(const Shape& x, const Shape& y) {
  const int32_t lead = x.ndim() - y.ndim();
  int64_t stride = 1;
  int64_t strides[CH_MAX_NDIM];
  for (int32_t d = x.ndim() - 1; d >= 0; --d) {
    strides[d] = stride;
    stride *= x[d];
  }
  int64_t ext[2][CH_MAX_NDIM], str[2][CH_MAX_NDIM];
  int32_t nd[2] = {0, 0};
  int64_t count[2] = {1, 1};
  for (int32_t d = 0; d < x.ndim(); ++d) {
    const int w = d >= lead && y[d - lead] == x[d] ? 0 : 1;  // 0: kept
    ext[w][nd[w]] = x[d];
    str[w][nd[w]] = strides[d];
    ++nd[w];
    count[w] *= x[d];
  }
  SumIndex<U> s;
  const int64_t* const kept_strides[1] = {str[0]};
  const int64_t* const reduced_strides[1] = {str[1]};
  s.kept = make_offset_calc<U, 1>(nd[0], ext[0], kept_strides);
  s.reduced = make_offset_calc<U, 1>(nd[1], ext[1], reduced_strides);
  s.n_out = static_cast<U>(count[0]);
  s.n_reduced = static_cast<U>(count[1]);
  return s;
}

// Few elements per output: one thread sums each output.
template <typename T, typename U>
__global__ void sum_per_thread_kernel(SumIndex<U> s, const T* __restrict__ x, T* __restrict__ y) {
  for (U j = grid_start_as<U>(); j < s.n_out; j += grid_step_as<U>()) {
    const T* base = x + s.kept(j);
    T acc = 0;
    for (U r = 0; r < s.n_reduced; ++r) acc += base[s.reduced(r)];
    y[j] = acc;
  }
}

// Many elements per output: one block sums each output.
template <typename T, typename U>
__global__ void sum_per_block_kernel(SumIndex<U> s, const T* __restrict__ x, T* __restrict__ y) {
  __shared__ T scratch[kBlockThreads];
  for (U j = blockIdx.x; j < s.n_out; j += gridDim.x) {
    const T* base = x + s.kept(j);
    T acc = 0;
    for (U r = threadIdx.x; r < s.n_reduced; r += blockDim.x) acc += base[s.reduced(r)];
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
template <typename T, typename U>
__global__ void sum_chunks_kernel(SumIndex<U> s, const T* __restrict__ x, T* __restrict__ partial,
                                  U per_chunk) {
  __shared__ T scratch[kBlockThreads];
  const U j = blockIdx.y, c = blockIdx.x;
  const T* base = x + s.kept(j);
  const U begin = c * per_chunk;
  const U end = per_chunk < s.n_reduced - begin ? begin + per_chunk : s.n_reduced;
  T acc = 0;
  for (U r = begin + threadIdx.x; r < end; r += blockDim.x) acc += base[s.reduced(r)];
  acc = block_sum(acc, scratch);
  if (threadIdx.x == 0) partial[static_cast<int64_t>(j) * gridDim.x + c] = acc;
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

// Outputs that are x's innermost elements (y's extents the trailing ones of
// x: a broadcast operand's gradient, a column sum): a block of kCols
// consecutive outputs x kRowThreads threads takes one range of the reduced
// elements (grid (column blocks, chunks)), consecutive threads reading
// consecutive elements; each thread adds every kRowThreads-th element of
// the range, the block's row 0 adds the kRowThreads sums in order, into y
// (one range) or partial[range * n_out + j], which a thread per output then
// adds in range order.
constexpr int kCols = 32, kRowThreads = 8;

template <typename T, typename U>
__global__ void sum_columns_kernel(SumIndex<U> s, const T* __restrict__ x, T* __restrict__ out,
                                   U per_chunk) {
  __shared__ T partial[kRowThreads][kCols];
  const U j = static_cast<U>(blockIdx.x) * kCols + threadIdx.x;
  const U begin = static_cast<U>(blockIdx.y) * per_chunk;
  const U end = per_chunk < s.n_reduced - begin ? begin + per_chunk : s.n_reduced;
  T acc = 0;
  if (j < s.n_out)
    for (U r = begin + threadIdx.y; r < end; r += kRowThreads) acc += x[s.reduced(r) + j];
  partial[threadIdx.y][threadIdx.x] = acc;
  __syncthreads();
  if (threadIdx.y == 0 && j < s.n_out) {
    T sum = partial[0][threadIdx.x];
    for (int k = 1; k < kRowThreads; ++k) sum += partial[k][threadIdx.x];
    out[static_cast<int64_t>(blockIdx.y) * s.n_out + j] = sum;
  }
}

template <typename T>
__global__ void sum_columns_finish_kernel(const T* __restrict__ partial, T* __restrict__ y,
                                          int64_t n_out, int64_t chunks) {
  for (int64_t j = grid_start(); j < n_out; j += grid_step()) {
    T acc = 0;
    for (int64_t c = 0; c < chunks; ++c) acc += partial[c * n_out + j];
    y[j] = acc;
  }
}

// Blocks a two-stage sum aims at (a few per SM of a large GPU).
constexpr int64_t kTargetBlocks = 1024;

void sum_to_kernel(const Array& x, Array& y) {
  DeviceGuard guard(x.device().index);
  const int64_t n_out = y.size(), n_reduced = y.size() ? x.size() / y.size() : 0;
  if (n_out == 0) return;
  if (n_reduced == 0) {
    check(cudaMemsetAsync(y.raw(), 0, y.nbytes(), nullptr), "sum_to", "cudaMemsetAsync");
    return;
  }
  dispatch_floating(x.dtype(), "sum_to", [&](auto t) {
    using T = decltype(t);
    dispatch_index(x.size(), [&](auto u) {
      using U = decltype(u);
      const SumIndex<U> s = sum_index<U>(x.shape(), y.shape());
      // y's elements contiguous in x (one kept axis run of stride 1).
      const bool inner = n_out > 1 && s.kept.ndim == 1 && s.kept.stride[0][0] == 1;
      if (inner) {
        const int64_t col_blocks = (n_out + kCols - 1) / kCols;
        int64_t chunks = kTargetBlocks / col_blocks;
        if (chunks > n_reduced / (8 * kRowThreads)) chunks = n_reduced / (8 * kRowThreads);
        if (chunks < 1) chunks = 1;
        if (chunks > 65535) chunks = 65535;
        const int64_t per_chunk = (n_reduced + chunks - 1) / chunks;
        chunks = (n_reduced + per_chunk - 1) / per_chunk;
        Array partial;
        if (chunks > 1) partial = Array::empty(x.dtype(), Shape{chunks * n_out}, x.device());
        check_launch(
            launch(sum_columns_kernel<T, U>,
                   dim3(static_cast<unsigned>(col_blocks), static_cast<unsigned>(chunks)),
                   dim3(kCols, kRowThreads), 0, nullptr, s, x.data<T>(),
                   chunks > 1 ? partial.data<T>() : y.data<T>(), static_cast<U>(per_chunk)),
            "sum_to");
        if (chunks > 1)
          launch_elementwise("sum_to", n_out, sum_columns_finish_kernel<T>, partial.data<T>(),
                             y.data<T>(), n_out, chunks);
      } else if (n_reduced < 4 * kBlockThreads && n_out >= n_reduced) {
        launch_elementwise("sum_to", n_out, sum_per_thread_kernel<T, U>, s, x.data<T>(),
                           y.data<T>());
      } else if (n_out < kTargetBlocks / 4 && n_reduced >= 16 * kBlockThreads) {
        int64_t chunks = kTargetBlocks / n_out;
        const int64_t most = n_reduced / (4 * kBlockThreads);  // >= 4 elements per thread
        if (chunks > most) chunks = most;
        const int64_t per_chunk = (n_reduced + chunks - 1) / chunks;
        chunks = (n_reduced + per_chunk - 1) / per_chunk;
        Array partial = Array::empty(x.dtype(), Shape{n_out * chunks}, x.device());
        check_launch(
            launch(sum_chunks_kernel<T, U>,
                   dim3(static_cast<unsigned>(chunks), static_cast<unsigned>(n_out)), kBlockThreads,
                   0, nullptr, s, x.data<T>(), partial.data<T>(), static_cast<U>(per_chunk)),
            "sum_to");
        launch_elementwise("sum_to", n_out, sum_chunks_finish_kernel<T>, partial.data<T>(),
                           y.data<T>(), n_out, chunks);
      } else {
        const unsigned blocks = blocks_for(n_out * kBlockThreads);
        check_launch(launch(sum_per_block_kernel<T, U>, blocks, kBlockThreads, 0, nullptr, s,
                            x.data<T>(), y.data<T>()),
                     "sum_to");
      }
    });
  });
}

// reduce_extreme: whether (v, i) replaces the best so far (bv, bi): a NaN
// first, then the extremum, then the smaller position (NumPy's first).
template <typename T>
__device__ __forceinline__ bool beats(T v, int64_t i, T bv, int64_t bi, bool is_min) {
  const bool vn = v != v, bn = bv != bv;
  if (vn || bn) return vn && (!bn || i < bi);
  if (v == bv) return i < bi;
  return is_min ? v < bv : v > bv;
}

// Few elements per output: one thread scans each output's elements in order.
template <typename T, typename U>
__global__ void extreme_per_thread_kernel(SumIndex<U> s, const T* __restrict__ x, bool is_min,
                                          T* __restrict__ y, int32_t* __restrict__ index) {
  for (U j = grid_start_as<U>(); j < s.n_out; j += grid_step_as<U>()) {
    const T* base = x + s.kept(j);
    T best = base[s.reduced(0)];
    U at = 0;
    for (U r = 1; r < s.n_reduced; ++r) {
      const T v = base[s.reduced(r)];
      if (beats<T>(v, r, best, at, is_min)) {
        best = v;
        at = r;
      }
    }
    if (y) y[j] = best;
    if (index) index[j] = static_cast<int32_t>(at);
  }
}

// Many elements per output: one block per output, each thread the best of
// every blockDim-th element, then a tree over (value, position) pairs.
template <typename T, typename U>
__global__ void extreme_per_block_kernel(SumIndex<U> s, const T* __restrict__ x, bool is_min,
                                         T* __restrict__ y, int32_t* __restrict__ index) {
  __shared__ T sv[kBlockThreads];
  __shared__ int64_t si[kBlockThreads];
  const unsigned t = threadIdx.x;
  for (U j = blockIdx.x; j < s.n_out; j += gridDim.x) {
    const T* base = x + s.kept(j);
    T best = 0;
    int64_t at = -1;
    for (U r = t; r < s.n_reduced; r += blockDim.x) {
      const T v = base[s.reduced(r)];
      if (at < 0 || beats<T>(v, r, best, at, is_min)) {
        best = v;
        at = r;
      }
    }
    sv[t] = best;
    si[t] = at;
    __syncthreads();
    for (unsigned k = blockDim.x / 2; k > 0; k >>= 1) {
      if (t < k && si[t + k] >= 0 &&
          (si[t] < 0 || beats<T>(sv[t + k], si[t + k], sv[t], si[t], is_min))) {
        sv[t] = sv[t + k];
        si[t] = si[t + k];
      }
      __syncthreads();
    }
    if (t == 0) {
      if (y) y[j] = sv[0];
      if (index) index[j] = static_cast<int32_t>(si[0]);
    }
    __syncthreads();
  }
}

void reduce_extreme_kernel(const Array& x, bool is_min, Array* y, Array* index) {
  const Array& out = y ? *y : *index;
  const int64_t n_out = out.size(), n_reduced = n_out ? x.size() / n_out : 0;
  if (n_out == 0 || n_reduced == 0) return;
  DeviceGuard guard(x.device().index);
  dispatch_floating(x.dtype(), "reduce_extreme", [&](auto t) {
    using T = decltype(t);
    T* py = y ? y->data<T>() : nullptr;
    int32_t* pi = index ? index->data<int32_t>() : nullptr;
    dispatch_index(x.size(), [&](auto u) {
      using U = decltype(u);
      const SumIndex<U> s = sum_index<U>(x.shape(), out.shape());
      if (n_reduced < 64 || n_out >= 4 * n_reduced) {
        launch_elementwise("reduce_extreme", n_out, extreme_per_thread_kernel<T, U>, s, x.data<T>(),
                           is_min, py, pi);
      } else {
        const unsigned blocks = blocks_for(n_out * kBlockThreads);
        check_launch(launch(extreme_per_block_kernel<T, U>, blocks, kBlockThreads, 0, nullptr, s,
                            x.data<T>(), is_min, py, pi),
                     "reduce_extreme");
      }
    });
  });
}

template <typename E, typename U>
__global__ void broadcast_copy_kernel(OffsetCalc<U, 1> oc, const E* __restrict__ x,
                                      E* __restrict__ y, U n) {
  for (U i = grid_start_as<U>(); i < n; i += grid_step_as<U>()) y[i] = x[oc(i)];
}

template <typename E>
void broadcast_copy(const Array& x, Array& y) {
  int64_t stride[CH_MAX_NDIM];
  broadcast_strides(x.shape(), y.shape(), stride);
  const int64_t* const strides[1] = {stride};
  dispatch_index(y.size(), [&](auto u) {
    using U = decltype(u);
    launch_elementwise("broadcast_to", y.size(), broadcast_copy_kernel<E, U>,
                       make_offset_calc<U, 1>(y.ndim(), y.shape().data(), strides), x.data<E>(),
                       y.data<E>(), static_cast<U>(y.size()));
  });
}

// Any dtype: elements are moved as unsigned integers of their size.
void broadcast_to_kernel(const Array& x, Array& y) {
  if (y.size() == 0) return;
  DeviceGuard guard(x.device().index);
  if (dtype_size(x.dtype()) == 8)
    broadcast_copy<uint64_t>(x, y);
  else
    broadcast_copy<uint32_t>(x, y);
}

void add_into(Array& acc, const Array& x) {
  if (acc.shape() != x.shape() || acc.dtype() != x.dtype() || acc.device() != x.device())
    fail(CH_ERR_SHAPE, "cannot add ", x.describe(), " into ", acc.describe());
  DeviceGuard guard(acc.device().index);
  dispatch_floating(acc.dtype(), "add_into", [&](auto t) {
    using T = decltype(t);
    map2<pointwise::Add, T>("add_into", acc.data<T>(), x.data<T>(), acc.data<T>(), acc.size());
  });
}

}  // namespace

void register_reduction_kernels() {
  constexpr int32_t gpu = CH_DEVICE_CUDA;
  kernels::sum_to.set(gpu, sum_to_kernel);
  kernels::broadcast_to.set(gpu, broadcast_to_kernel);
  kernels::add_into.set(gpu, add_into);
  kernels::reduce_extreme.set(gpu, reduce_extreme_kernel);
}

}  // namespace chainerc::cuda
