#include <ch/common.h>

#include "fill_kernels.h"
#include "launch.h"

namespace chainerc::cuda {
namespace {

constexpr int kThreads = 256;

int blocks_for(int64_t n) {
  int64_t b = (n + kThreads - 1) / kThreads;
  return static_cast<int>(b < 65535 * 8 ? b : 65535 * 8);  // grid-stride beyond this
}

template <typename T>
__global__ void fill_kernel(T* p, int64_t n, T v) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    p[i] = v;
}

template <typename T>
__global__ void uniform_map_kernel(T* p, int64_t n, T a, T b) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    T u = a + b * (T(1) - p[i]);
    // (1 - x) may round to 1 in float: keep the interval half-open.
    p[i] = u < a + b ? u : a;
  }
}

}  // namespace

cudaError_t launch_fill(void* ptr, int32_t dtype, int64_t n, double value, cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  const int g = blocks_for(n);
  switch (dtype) {
    case CH_FLOAT32:
      return launch(fill_kernel<float>, g, kThreads, 0, stream, static_cast<float*>(ptr), n,
                    static_cast<float>(value));
    case CH_FLOAT64:
      return launch(fill_kernel<double>, g, kThreads, 0, stream, static_cast<double*>(ptr), n,
                    value);
    default:
      return launch(fill_kernel<int32_t>, g, kThreads, 0, stream, static_cast<int32_t*>(ptr), n,
                    static_cast<int32_t>(value));
  }
}

cudaError_t launch_uniform_map(void* ptr, int32_t dtype, int64_t n, double a, double b,
                               cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  const int g = blocks_for(n);
  if (dtype == CH_FLOAT32)
    return launch(uniform_map_kernel<float>, g, kThreads, 0, stream, static_cast<float*>(ptr), n,
                  static_cast<float>(a), static_cast<float>(b));
  return launch(uniform_map_kernel<double>, g, kThreads, 0, stream, static_cast<double*>(ptr), n, a,
                b);
}

}  // namespace chainerc::cuda
