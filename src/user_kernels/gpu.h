// The GPU side of user kernels, as the rest of chainerc sees it: compile a
// generated CUDA source with NVRTC (disk cache), load it on a device (module
// cache per device) and launch it with device pointers, an element count and
// a stream. Implemented in cuda/user_kernels/ when the build has NVRTC and the CUDA
// runtime; otherwise by gpu_stub.cpp, which fails with CH_ERR_UNSUPPORTED.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace chainerc::kernels::gpu {

// True when this build can compile and launch user kernels on CUDA devices.
bool built();

// Launch `kernel_name` from `source` on CUDA device `device` with arguments
// (count, args) where `args` is the kernel's ch_args block (pointers then
// info, args_size bytes); grid x block threads; `stream` a cudaStream_t
// (nullptr = the default stream). Compiles for the device's architecture.
void launch(int device, const std::string& source, const std::string& kernel_name, long long count,
            const void* args, size_t args_size, unsigned grid, unsigned block, void* stream);

// Number of multiprocessors of `device` (for grid sizes).
int multiprocessor_count(int device);

}  // namespace chainerc::kernels::gpu
