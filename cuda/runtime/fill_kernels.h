// Small kernels of the runtime itself (not of any op): fills and affine maps.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace chainerc::cuda {

// dtype: CH_FLOAT32, CH_FLOAT64 or CH_INT32. Queued on `stream`; returns the
// launch's error (cudaSuccess when n is 0).
cudaError_t launch_fill(void* ptr, int32_t dtype, int64_t n, double value, cudaStream_t stream);
// x = a + b * (1 - x) for float (dtype CH_FLOAT32) or double data: maps
// cuRAND's (0, 1] uniform samples to [a, a + b).
cudaError_t launch_uniform_map(void* ptr, int32_t dtype, int64_t n, double a, double b,
                               cudaStream_t stream);

}  // namespace chainerc::cuda
