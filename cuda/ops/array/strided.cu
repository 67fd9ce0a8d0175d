// CUDA kernels of the strided gather and its adjoint, the scatter-add
// (kernels::gather / kernels::scatter_add; get_item, flip, tile, repeat, pad,
// select_item and their backwards): a thread per element of y, its position
// in x found from its index through the view. The scatter adds with atomicAdd
// where positions may repeat (an index array or a zero stride), so its sums
// are then in no fixed order; under ch_config_set_deterministic one thread
// adds them in y's order. Distinct positions are plain adds.
#include "core/config.h"
#include "cuda/ops/elementwise.cuh"
#include "cuda/ops/kernel_list.h"
#include "kernels/array.h"

namespace chainerc::cuda {
namespace {

struct Walk {
  int32_t nd = 0;
  int64_t extent[CH_MAX_NDIM] = {};
  kernels::StridedView v;
};

Walk walk_of(const Shape& ys, const kernels::StridedView& v) {
  Walk w;
  w.nd = ys.ndim();
  for (int32_t d = 0; d < w.nd; ++d) w.extent[d] = ys[d];
  w.v = v;
  return w;
}

__device__ __forceinline__ int64_t position(const Walk& w, const int32_t* index, int64_t i) {
  int64_t pos = w.v.offset, ip = 0;
  for (int32_t d = w.nd - 1; d >= 0; --d) {
    const int64_t e = w.extent[d], k = i % e;
    i /= e;
    pos += k * w.v.stride[d];
    ip += k * w.v.index_stride[d];
  }
  if (index) {
    int64_t j = index[ip];
    if (j < 0) j += w.v.index_extent;
    pos += j * w.v.index_scale;
  }
  return pos;
}

template <typename E>
__global__ void gather_kernel(Walk w, const int32_t* __restrict__ index, const E* __restrict__ x,
                              E* __restrict__ y, int64_t n) {
  for (int64_t i = grid_start(); i < n; i += grid_step()) y[i] = x[position(w, index, i)];
}

template <typename T>
__global__ void scatter_atomic_kernel(Walk w, const int32_t* __restrict__ index,
                                      const T* __restrict__ y, T* __restrict__ x, int64_t n) {
  for (int64_t i = grid_start(); i < n; i += grid_step())
    atomicAdd(x + position(w, index, i), y[i]);
}

template <typename T>
__global__ void scatter_distinct_kernel(Walk w, const T* __restrict__ y, T* __restrict__ x,
                                        int64_t n) {
  for (int64_t i = grid_start(); i < n; i += grid_step()) x[position(w, nullptr, i)] += y[i];
}

// One thread, y's order: the deterministic sums.
template <typename T>
__global__ void scatter_ordered_kernel(Walk w, const int32_t* __restrict__ index,
                                       const T* __restrict__ y, T* __restrict__ x, int64_t n) {
  if (grid_start() != 0) return;
  for (int64_t i = 0; i < n; ++i) x[position(w, index, i)] += y[i];
}

void gather(const Array& x, const kernels::StridedView& v, const Array& index, Array& y) {
  const int64_t n = y.size();
  if (n == 0) return;
  DeviceGuard guard(x.device().index);
  const Walk w = walk_of(y.shape(), v);
  const int32_t* pi = index.defined() ? index.data<int32_t>() : nullptr;
  if (dtype_size(x.dtype()) == 8)
    launch_elementwise("gather", n, gather_kernel<uint64_t>, w, pi, x.data<uint64_t>(),
                       y.data<uint64_t>(), n);
  else
    launch_elementwise("gather", n, gather_kernel<uint32_t>, w, pi, x.data<uint32_t>(),
                       y.data<uint32_t>(), n);
}

template <typename T>
void scatter_as(const Array& y, const Walk& w, const int32_t* pi, bool distinct, Array& x) {
  const int64_t n = y.size();
  if (distinct)
    launch_elementwise("scatter_add", n, scatter_distinct_kernel<T>, w, y.data<T>(), x.data<T>(),
                       n);
  else if (config::deterministic())
    launch_elementwise("scatter_add", 1, scatter_ordered_kernel<T>, w, pi, y.data<T>(), x.data<T>(),
                       n);
  else
    launch_elementwise("scatter_add", n, scatter_atomic_kernel<T>, w, pi, y.data<T>(), x.data<T>(),
                       n);
}

void scatter_add(const Array& y, const kernels::StridedView& v, const Array& index, Array& x) {
  const int64_t n = y.size();
  if (n == 0) return;
  DeviceGuard guard(y.device().index);
  const Walk w = walk_of(y.shape(), v);
  const int32_t* pi = index.defined() ? index.data<int32_t>() : nullptr;
  // The views the ops build are one-to-one but for an index array and zero
  // strides (over extents above 1).
  bool distinct = pi == nullptr;
  for (int32_t d = 0; d < w.nd && distinct; ++d) distinct = w.extent[d] <= 1 || v.stride[d] != 0;
  switch (x.dtype()) {
    case DType::Float32:
      scatter_as<float>(y, w, pi, distinct, x);
      break;
    case DType::Float64:
      scatter_as<double>(y, w, pi, distinct, x);
      break;
    case DType::Int32:
      scatter_as<int32_t>(y, w, pi, distinct, x);
      break;
  }
}

}  // namespace

void register_strided_kernels() {
  kernels::gather.set(CH_DEVICE_CUDA, gather);
  kernels::scatter_add.set(CH_DEVICE_CUDA, scatter_add);
}

}  // namespace chainerc::cuda
