// The CUDA backend's op kernels: each file of cuda/ops/<group>/ fills the
// kernels of src/kernels/<group>.h it implements for CH_DEVICE_CUDA in its
// register_*_kernels(), and register_kernels() calls them all, from an
// explicit list (kernel_list.cpp), as the CPU backend does.
#pragma once

namespace chainerc::cuda {

void register_kernels();

// math
void register_arithmetic_kernels();
void register_reduction_kernels();
void register_gemm_kernels();
// activation
void register_activation_kernels();
void register_softmax_kernels();
void register_prelu_kernels();
void register_lstm_kernels();
// noise
void register_dropout_kernels();
// evaluation
void register_accuracy_kernels();
// array
void register_concat_kernels();
void register_transpose_kernels();
void register_strided_kernels();
// loss
void register_label_kernels();
void register_softmax_cross_entropy_kernels();
void register_mean_squared_error_kernels();
void register_hierarchical_softmax_kernels();
// connection
void register_parameter_kernels();
void register_linear_kernels();
void register_convolution_2d_kernels();
void register_embed_id_kernels();
// pooling
void register_max_pooling_2d_kernels();
void register_average_pooling_2d_kernels();
// normalization
void register_batch_normalization_kernels();
void register_local_response_normalization_kernels();
void register_row_normalization_kernels();
// optimizers
void register_optimizer_update_kernels();
void register_grad_utils_kernels();

}  // namespace chainerc::cuda
