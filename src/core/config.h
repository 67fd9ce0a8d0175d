// Process-wide settings behind include/ch/config.h.
#pragma once

#include <cstdint>

namespace chainerc::config {

bool train_default();
void set_train_default(bool train);
// Resolve a `train` argument of the C API: CH_MODE_DEFAULT (-1) means the
// process default; 0 is test, anything else train.
bool resolve_train(int32_t train);

// Whether the CUDA backend may use cuDNN where this build has it (the seed's
// use_cudnn; default true). When false, or where cuDNN cannot be loaded,
// chainerc's own CUDA kernels run.
bool use_cudnn();
void set_use_cudnn(bool on);
// Whether float32 GEMMs and convolutions on CUDA may use TF32 tensor cores
// (default false: full float32 precision).
bool allow_tf32();
void set_allow_tf32(bool on);
// Whether CUDA work must give bit-identical results from run to run: cuDNN
// is limited to its deterministic algorithms (default false). chainerc's own
// CUDA kernels are deterministic either way (fixed-order sums, no
// floating-point atomics).
bool deterministic();
void set_deterministic(bool on);

}  // namespace chainerc::config
