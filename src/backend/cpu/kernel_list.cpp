// The explicit list of the CPU backend's kernels (not static
// self-registration, which a static link into libchainerc.a would drop).
#include "kernel_list.h"

namespace chainerc::cpu {

// The kernels src/ops/manifest.py declares, from the list scripts/gen_functions.py
// writes (ops/generated/kernels.cpp).
void register_generated_kernels();

void register_kernels() {
  register_generated_kernels();
  register_arithmetic_kernels();
  register_reduction_kernels();

  register_linear_kernels();
  register_parameter_kernels();
  register_convolution_2d_kernels();
  register_embed_id_kernels();

  register_max_pooling_2d_kernels();
  register_average_pooling_2d_kernels();

  register_batch_normalization_kernels();
  register_local_response_normalization_kernels();
  register_row_normalization_kernels();

  // activation
  register_activation_kernels();
  register_softmax_kernels();
  register_lstm_kernels();
  // loss
  register_label_kernels();
  register_softmax_cross_entropy_kernels();
  register_mean_squared_error_kernels();
  register_hierarchical_softmax_kernels();
  // evaluation
  register_accuracy_kernels();
  // noise
  register_dropout_kernels();
  // array
  register_concat_kernels();
  register_transpose_kernels();
  register_strided_kernels();
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
