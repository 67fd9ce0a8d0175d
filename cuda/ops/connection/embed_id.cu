// CUDA kernels of EmbedID: the id check (the first id out of range, by an
// atomicMin), the row gather (element-wise over the output) and its
// scatter-add (atomicAdd: ids may repeat, so gW's sums are in no fixed order;
// under ch_config_set_deterministic a thread per column adds in id order).
#include "core/config.h"
#include "cuda/ops/kernel_list.h"
#include "cuda/ops/rows.cuh"
#include "kernels/connection.h"

namespace chainerc::cuda {
namespace {

int64_t embed_id_find_invalid(const Array& ids, int64_t in_size) {
  return first_out_of_range(ids, in_size, "embed_id_find_invalid");
}

// y[k, j] = W[ids[k], j]; elements moved as unsigned integers of their size.
template <typename E>
__global__ void gather_rows_kernel(const int32_t* __restrict__ ids, const E* __restrict__ W,
                                   E* __restrict__ y, int64_t n, int64_t m, int64_t in_size) {
  for (int64_t i = grid_start(); i < n * m; i += grid_step()) {
    const int64_t k = i / m, id = ids[k];
    // An id outside [0, in_size) is reported by the deferred check
    // (ops/connection/embed_id.cpp): its row reads as zeros.
    y[i] = id >= 0 && id < in_size ? W[id * m + (i - k * m)] : E(0);
  }
}

void embed_id_forward(const Array& ids, const Array& W, Array& y) {
  DeviceGuard guard(ids.device().index);
  const int64_t n = ids.size(), m = W.shape()[1];
  if (dtype_size(W.dtype()) == 8)
    launch_elementwise("embed_id_forward", n * m, gather_rows_kernel<uint64_t>, ids.data<int32_t>(),
                       W.data<uint64_t>(), y.data<uint64_t>(), n, m, W.shape()[0]);
  else
    launch_elementwise("embed_id_forward", n * m, gather_rows_kernel<uint32_t>, ids.data<int32_t>(),
                       W.data<uint32_t>(), y.data<uint32_t>(), n, m, W.shape()[0]);
}

// gW[ids[k], j] += gy[k, j].
template <typename T>
__global__ void scatter_add_rows_kernel(const int32_t* __restrict__ ids, const T* __restrict__ gy,
                                        T* __restrict__ gW, int64_t n, int64_t m, int64_t in_size) {
  for (int64_t i = grid_start(); i < n * m; i += grid_step()) {
    const int64_t k = i / m, id = ids[k];
    if (id >= 0 && id < in_size) atomicAdd(gW + id * m + (i - k * m), gy[i]);
  }
}

// The same sums in a fixed order: a thread per column j walks the ids in order.
template <typename T>
__global__ void ordered_add_rows_kernel(const int32_t* __restrict__ ids, const T* __restrict__ gy,
                                        T* __restrict__ gW, int64_t n, int64_t m, int64_t in_size) {
  for (int64_t j = grid_start(); j < m; j += grid_step())
    for (int64_t k = 0; k < n; ++k)
      if (ids[k] >= 0 && ids[k] < in_size)
        gW[static_cast<int64_t>(ids[k]) * m + j] += gy[k * m + j];
}

void embed_id_backward(const Array& ids, const Array& gy, Array& gW) {
  DeviceGuard guard(ids.device().index);
  const int64_t n = ids.size(), m = gW.shape()[1];
  dispatch_floating(gW.dtype(), "EmbedID", [&](auto t) {
    using T = decltype(t);
    if (config::deterministic())
      launch_elementwise("embed_id_backward", m, ordered_add_rows_kernel<T>, ids.data<int32_t>(),
                         gy.data<T>(), gW.data<T>(), n, m, gW.shape()[0]);
    else
      launch_elementwise("embed_id_backward", n * m, scatter_add_rows_kernel<T>,
                         ids.data<int32_t>(), gy.data<T>(), gW.data<T>(), n, m, gW.shape()[0]);
  });
}

}  // namespace

void register_embed_id_kernels() {
  kernels::embed_id_find_invalid.set(CH_DEVICE_CUDA, embed_id_find_invalid);
  kernels::embed_id_forward.set(CH_DEVICE_CUDA, embed_id_forward);
  kernels::embed_id_backward.set(CH_DEVICE_CUDA, embed_id_backward);
}

}  // namespace chainerc::cuda
