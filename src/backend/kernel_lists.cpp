// Fills the kernel tables of src/kernels/ from every backend of this build.
#include <mutex>

#include "backend/cpu/kernel_list.h"
#include "kernels/registry.h"

namespace chainerc::kernels {

void register_all_kernels() {
  static std::once_flag once;
  std::call_once(once, [] { cpu::register_kernels(); });
}

namespace detail {
void no_kernel(const char* kernel, Device device) {
  fail(CH_ERR_DEVICE, kernel, ": no kernel for ", device.to_string(), " in this build (chainerc ",
       "implements it on ", device.type == CH_DEVICE_CUDA ? "the CPU only so far" : "other devices",
       "; copy the arrays to a device that has it)");
}
}  // namespace detail

}  // namespace chainerc::kernels
