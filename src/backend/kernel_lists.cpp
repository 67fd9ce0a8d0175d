// Fills the kernel tables of src/kernels/ from every backend of this build.
#include <mutex>

#include "backend/cpu/kernel_list.h"
#include "kernels/registry.h"

namespace chainerc::kernels {

void register_all_kernels() {
  static std::once_flag once;
  std::call_once(once, [] { cpu::register_kernels(); });
}

}  // namespace chainerc::kernels
