// Device memory of the CUDA backend: one caching allocator per device over
// cudaMalloc/cudaFree (see src/core/caching_allocator.h). Kernels, cuBLAS and
// cuDNN workspaces all take their memory from here. The allocator's stream
// key null stands for the device's engine stream (streams.h); blocks used on
// other streams too are told so with record_stream.
#pragma once

#include <cstdint>

#include "core/caching_allocator.h"

namespace chainerc::cuda {

// The allocator of device `index` (checked). Borrowed; lives for the process.
CachingAllocator& device_allocator(int32_t index, const char* who);

}  // namespace chainerc::cuda
