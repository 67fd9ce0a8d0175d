// The emulated NVRTC (-Dcuda-emulation=true): user kernels
// (ch_elementwise_kernel, ch_reduction_kernel) on the emulated CUDA devices.
// It implements src/user_kernels/gpu.h: the generated CUDA source is compiled
// by the host C++ compiler into a shared object against the emulation
// headers, cached (in memory per process, and in the user-kernel disk cache
// directory, cuda/user_kernels/disk_cache.h), loaded with dlopen and run on
// the emulator's fibers with the grid and block a GPU would get.
//
// The compiler: $CH_EMU_CXX if set, else the C++ compiler this build was
// configured with (recorded at configure time), else $CXX, else c++ on PATH;
// none found is CH_ERR_UNSUPPORTED. A source that does not compile is
// CH_ERR_INVALID_ARGUMENT with the compiler's output, as NVRTC's log.
#pragma once

#include <string>

namespace chainerc::kernels::emulated_nvrtc {

// Compiler runs (cache misses in memory and on disk) in this process.
long long compile_count();
// Shared objects loaded (from a compile or from the disk cache) in this process.
long long load_count();
// The compiler command the next compile would run (words joined by spaces),
// or "" with *why set when none is found.
std::string compiler(std::string* why);
// Forgets the objects loaded in this process (they stay mapped), so that the
// next launches go through the disk cache again; for tests.
void forget_loaded();

}  // namespace chainerc::kernels::emulated_nvrtc
