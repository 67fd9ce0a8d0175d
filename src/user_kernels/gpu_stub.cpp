// Builds without NVRTC or the CUDA runtime: user kernels run on the CPU only.
#include "core/error.h"
#include "gpu.h"

namespace chainerc::kernels::gpu {

bool built() { return false; }

void launch(int device, const std::string&, const std::string& kernel_name, long long, const void*,
            size_t, unsigned, unsigned, void*) {
  fail(CH_ERR_UNSUPPORTED, "kernel '", kernel_name, "': cuda:", device,
       " was requested but this build of chainerc has no NVRTC/CUDA support for user kernels");
}

int multiprocessor_count(int) { return 1; }

}  // namespace chainerc::kernels::gpu
