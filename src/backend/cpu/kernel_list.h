// The CPU backend's kernel registration, one function per file of
// src/backend/cpu/ops/, each setting the CPU implementations of the kernels
// its op group declares in src/kernels/. kernel_list.cpp calls them all.
#pragma once

namespace chainerc::cpu {

void register_kernels();  // all of the below, once (kernels::register_all_kernels)

// ops/math/
void register_arithmetic_kernels();
void register_reduction_kernels();

// ops/connection/
void register_linear_kernels();
void register_parameter_kernels();
void register_convolution_2d_kernels();
void register_embed_id_kernels();

// ops/pooling/
void register_max_pooling_2d_kernels();
void register_average_pooling_2d_kernels();

// ops/normalization/
void register_batch_normalization_kernels();
void register_local_response_normalization_kernels();
void register_row_normalization_kernels();

// ops/activation/
void register_activation_kernels();
void register_softmax_kernels();
void register_lstm_kernels();

// ops/loss/
void register_label_kernels();
void register_softmax_cross_entropy_kernels();
void register_mean_squared_error_kernels();
void register_hierarchical_softmax_kernels();

// ops/evaluation/
void register_accuracy_kernels();

// ops/noise/
void register_dropout_kernels();

// ops/array/
void register_concat_kernels();
void register_transpose_kernels();
void register_strided_kernels();
// ops/optimizers/
void register_sgd_kernels();
void register_momentum_sgd_kernels();
void register_adagrad_kernels();
void register_adadelta_kernels();
void register_adam_kernels();
void register_rmsprop_kernels();
void register_grad_utils_kernels();

}  // namespace chainerc::cpu
