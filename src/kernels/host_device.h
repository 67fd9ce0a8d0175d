// CH_HOST_DEVICE marks the per-element math in src/kernels/pointwise/: the
// host compiler builds it into the CPU backend's loops, nvcc into the CUDA
// kernels, so a CPU test runs the very math the GPU runs.
#pragma once

#if defined(__CUDACC__)
#define CH_HOST_DEVICE __host__ __device__ __forceinline__
#else
#define CH_HOST_DEVICE inline
#include <cmath>
// On the host the math functions are the <cmath> overloads (expf for a float,
// exp for a double), as CUDA's math overload set is on the device.
namespace chainerc::pointwise {
using std::exp;
using std::fabs;
using std::log;
using std::log1p;
using std::pow;
using std::sqrt;
using std::tanh;
}  // namespace chainerc::pointwise
#endif
