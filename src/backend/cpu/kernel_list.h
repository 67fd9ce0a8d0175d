// The CPU backend's kernel registration, one function per file of
// src/backend/cpu/ops/, each setting the CPU implementations of the kernels
// its op group declares in src/kernels/. kernel_list.cpp calls them all.
#pragma once

namespace chainerc::cpu {

void register_kernels();  // all of the below, once (kernels::register_all_kernels)

// ops/math/
void register_arithmetic_kernels();
void register_reduction_kernels();

// ops/optimizers/
void register_sgd_kernels();
void register_momentum_sgd_kernels();
void register_adagrad_kernels();
void register_adadelta_kernels();
void register_adam_kernels();
void register_rmsprop_kernels();
void register_grad_utils_kernels();

}  // namespace chainerc::cpu
