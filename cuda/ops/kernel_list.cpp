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
  // loss
  register_label_kernels();
  register_softmax_cross_entropy_kernels();
  register_mean_squared_error_kernels();
  register_hierarchical_softmax_kernels();
  // connection
  register_parameter_kernels();
  register_linear_kernels();
  register_convolution_2d_kernels();
  register_embed_id_kernels();
}

}  // namespace chainerc::cuda
