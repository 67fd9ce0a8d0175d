// The explicit list of the CUDA backend's op kernels (not static
// self-registration, which a static link into libchainerc.a would drop).
#include "kernel_list.h"

namespace chainerc::cuda {

void register_kernels() {
  // math
  register_arithmetic_kernels();
  register_reduction_kernels();
  register_gemm_kernels();
  // activation
  register_activation_kernels();
  // pooling
  register_max_pooling_2d_kernels();
  register_average_pooling_2d_kernels();
  // normalization
  register_batch_normalization_kernels();
  register_local_response_normalization_kernels();
  // optimizers
  register_optimizer_update_kernels();
  register_grad_utils_kernels();
}

}  // namespace chainerc::cuda
