// Helpers of the CUDA kernels of the loss and connection groups: the block
// size of one-row-per-block work, the search for the first element failing a
// check (labels, ids), and host tables copied to the device.
#pragma once

#include <cstring>
#include <vector>

#include "cuda/ops/elementwise.cuh"
#include "cuda/ops/reduce.cuh"

namespace chainerc::cuda {

// Threads per block for work done one row per block with a block-wide
// reduction (block_sum / block_max): the smallest power of two in
// [32, kBlockThreads] that covers a row of n elements, or kBlockThreads.
inline int row_threads(int64_t n) {
  int t = 32;
  while (t < kBlockThreads && t < n) t *= 2;
  return t;
}

// The smallest index of an element failing a check: one device word, all
// ones until a thread records an index (atomicMin), read back by get().
class FirstIndex {
 public:
  explicit FirstIndex(Device device) : slot_(Array::empty(DType::Float64, Shape{1}, device)) {
    check(cudaMemsetAsync(slot_.raw(), 0xff, sizeof(unsigned long long), nullptr), "first index",
          "cudaMemsetAsync");
  }
  unsigned long long* slot() const { return static_cast<unsigned long long*>(slot_.raw()); }
  // The recorded index, or -1 when no thread recorded one (waits for the
  // kernels before it on the default stream).
  int64_t get() const {
    const Array host = slot_.to_device(Device{});
    unsigned long long v = 0;
    std::memcpy(&v, host.raw(), sizeof v);
    return v == ~0ull ? -1 : static_cast<int64_t>(v);
  }

 private:
  Array slot_;
};

__device__ __forceinline__ void record_first(unsigned long long* first, int64_t i) {
  atomicMin(first, static_cast<unsigned long long>(i));
}

// The bytes of a host table as a device array on `device` (read by kernels
// through a cast of raw(); never empty, so raw() is a valid pointer).
template <typename T>
Array upload(const std::vector<T>& v, Device device) {
  const size_t bytes = v.size() * sizeof(T);
  Array host = Array::empty(DType::Int32, Shape{static_cast<int64_t>(bytes / 4 + 2)});
  if (bytes) std::memcpy(host.raw(), v.data(), bytes);
  return host.to_device(device);
}

// Records in *first the smallest i with ids[i] outside [0, limit).
template <typename I>
__global__ void first_out_of_range_kernel(const I* __restrict__ ids, int64_t n, int64_t limit,
                                          unsigned long long* first) {
  for (int64_t i = grid_start(); i < n; i += grid_step())
    if (ids[i] < 0 || ids[i] >= limit) {
      record_first(first, i);  // later indices of this thread are larger
      return;
    }
}

// The flat index of the first int32 id outside [0, limit), or -1.
inline int64_t first_out_of_range(const Array& ids, int64_t limit, const char* who) {
  if (ids.size() == 0) return -1;
  DeviceGuard guard(ids.device().index);
  FirstIndex first(ids.device());
  launch_elementwise(who, ids.size(), first_out_of_range_kernel<int32_t>, ids.data<int32_t>(),
                     ids.size(), limit, first.slot());
  return first.get();
}

// out[0] = (the sum of v[0, n)) / divisor, in double, by one block
// (kBlockThreads threads) in a fixed order: the last step of a loss.
template <typename T>
__global__ void finish_sum_kernel(const double* __restrict__ v, int64_t n, double divisor,
                                  T* __restrict__ out) {
  __shared__ double scratch[kBlockThreads];
  double acc = 0;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) acc += v[i];
  acc = block_sum(acc, scratch);
  if (threadIdx.x == 0) out[0] = static_cast<T>(acc / divisor);
}

template <typename T>
void finish_sum(const Array& v, int64_t n, double divisor, Array& out, const char* who) {
  check_launch(launch(finish_sum_kernel<T>, 1, kBlockThreads, 0, nullptr, v.data<double>(), n,
                      divisor, out.data<T>()),
               who);
}

}  // namespace chainerc::cuda
