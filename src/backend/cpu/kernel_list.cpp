// The explicit list of the CPU backend's kernels (not static
// self-registration, which a static link into libchainerc.a would drop).
#include "kernel_list.h"

namespace chainerc::cpu {

void register_kernels() {
  register_arithmetic_kernels();
  register_reduction_kernels();
  // ops/optimizers/
  register_sgd_kernels();
  register_momentum_sgd_kernels();
  register_adagrad_kernels();
  register_adadelta_kernels();
  register_adam_kernels();
  register_rmsprop_kernels();
  register_grad_utils_kernels();
}

}  // namespace chainerc::cpu
