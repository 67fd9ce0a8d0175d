// Block-wide reductions for the CUDA op kernels: every thread of the block
// calls them with its partial value, and every thread gets the result.
// `scratch` is shared memory of blockDim.x elements; blockDim.x must be a
// power of two (kBlockThreads is). A tree in shared memory with a barrier per
// level: the order of the additions is fixed, so results are reproducible.
#pragma once

#include <cuda_runtime.h>

namespace chainerc::cuda {

template <typename T>
__device__ T block_sum(T v, T* scratch) {
  const unsigned t = threadIdx.x;
  scratch[t] = v;
  __syncthreads();
  for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
    if (t < s) scratch[t] += scratch[t + s];
    __syncthreads();
  }
  const T r = scratch[0];
  __syncthreads();  // before the caller reuses scratch
  return r;
}

template <typename T>
__device__ T block_max(T v, T* scratch) {
  const unsigned t = threadIdx.x;
  scratch[t] = v;
  __syncthreads();
  for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
    if (t < s && scratch[t + s] > scratch[t]) scratch[t] = scratch[t + s];
    __syncthreads();
  }
  const T r = scratch[0];
  __syncthreads();
  return r;
}

}  // namespace chainerc::cuda
