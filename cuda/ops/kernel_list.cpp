// The explicit list of the CUDA backend's op kernels (not static
// self-registration, which a static link into libchainerc.a would drop).
#include "kernel_list.h"

#if defined(CH_HAVE_CUDNN)
#include "cuda/cudnn/cudnn_util.h"
#endif

namespace chainerc::cuda {

// The kernels src/ops/manifest.py declares, from the list scripts/gen_functions.py
// writes (ops/generated/kernels.cu).
void register_generated_kernels();

void register_kernels() {
  register_generated_kernels();
  // math
  register_arithmetic_kernels();
  register_reduction_kernels();
  register_gemm_kernels();
  // activation
  register_activation_kernels();
  register_softmax_kernels();
  register_prelu_kernels();
  register_lstm_kernels();
  // noise
  register_dropout_kernels();
  // evaluation
  register_accuracy_kernels();
  // array
  register_concat_kernels();
  register_transpose_kernels();
  register_strided_kernels();
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

  // pooling
  register_max_pooling_2d_kernels();
  register_average_pooling_2d_kernels();
  // normalization
  register_batch_normalization_kernels();
  register_local_response_normalization_kernels();
  register_row_normalization_kernels();
  // optimizers
  register_optimizer_update_kernels();
  register_grad_utils_kernels();

  // Last: cuDNN over the own kernels above, which it keeps and falls back to
  // (cuda/cudnn/cudnn_util.h).
#if defined(CH_HAVE_CUDNN)
  cudnn::register_cudnn_kernels();
#endif
}

}  // namespace chainerc::cuda
