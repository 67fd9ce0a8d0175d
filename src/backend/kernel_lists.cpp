// Fills the kernel tables of src/kernels/ from every backend of this build.
#include <mutex>

#include "backend/cpu/kernel_list.h"
#include "kernels/registry.h"
#if defined(CH_HAVE_CUDA)
#include "cuda/ops/kernel_list.h"
#endif

namespace chainerc::kernels {

void register_all_kernels() {
  static std::once_flag once;
  std::call_once(once, [] {
    cpu::register_kernels();
#if defined(CH_HAVE_CUDA)
    cuda::register_kernels();
#endif
  });
}

}  // namespace chainerc::kernels
