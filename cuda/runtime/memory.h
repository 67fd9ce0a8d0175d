// Device memory of the CUDA backend: one caching allocator per device over
// cudaMalloc/cudaFree (see src/core/caching_allocator.h). Kernels, cuBLAS and
// cuDNN workspaces all take their memory from here.
#pragma once

#include <cstdint>

#include "core/caching_allocator.h"

namespace chainerc::cuda {

// The allocator of device `index` (checked). Borrowed; lives for the process.
CachingAllocator& device_allocator(int32_t index, const char* who);

}  // namespace chainerc::cuda
