// The explicit list of the CPU backend's kernels (not static
// self-registration, which a static link into libchainerc.a would drop).
#include "kernel_list.h"

namespace chainerc::cpu {

void register_kernels() {
  register_arithmetic_kernels();
  register_reduction_kernels();

  register_linear_kernels();
  register_parameter_kernels();
  register_convolution_2d_kernels();
  register_embed_id_kernels();
  register_inception_kernels();

  register_max_pooling_2d_kernels();
  register_average_pooling_2d_kernels();

  register_batch_normalization_kernels();
  register_local_response_normalization_kernels();
}

}  // namespace chainerc::cpu
