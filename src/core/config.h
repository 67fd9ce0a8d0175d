// Process-wide settings behind include/ch/config.h.
#pragma once

#include <cstdint>
#include <string>

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

// cuDNN's states, numbered as include/ch/config.h's CH_CUDNN_* (src/capi/
// config.cpp checks that they agree).
enum CudnnState : int32_t {
  kCudnnInUse = 0,
  kCudnnSwitchedOff = 1,
  kCudnnNotBuilt = 2,
  kCudnnNotFound = 3,
  kCudnnVersionMismatch = 4,
  kCudnnNoDevice = 5,
  kCudnnInitFailed = 6,
};
// cuDNN's state (include/ch/config.h's ch_config_cudnn): a CudnnState,
// cudnnGetVersion() (0 when not loaded) and why it is not in use.
struct CudnnStatus {
  int32_t state;
  int32_t version;
  std::string reason;
};
// Set by cuda/cudnn/handle.cpp where cuDNN is built: loads libcudnn and makes
// a handle on the current device if not done yet. Without it the state is
// "not built".
using CudnnProbe = CudnnStatus (*)();
void set_cudnn_probe(CudnnProbe probe);
CudnnStatus cudnn_status();
// CH_DISABLE_CUDNN=1 in the environment: cuDNN is never loaded (the own
// kernels run, as with set_use_cudnn(false)); read once.
bool cudnn_disabled_by_env();
// CH_REQUIRE_CUDNN=1: a CUDA kernel that cuDNN would run fails with
// CH_ERR_DEVICE (naming cudnn_status().reason) when cuDNN is absent, unless
// switched off on purpose (set_use_cudnn(false), CH_DISABLE_CUDNN=1).
bool cudnn_required();
// Throws that error when cuDNN is required and absent; a no-op otherwise.
// With unbuilt_only, only where this build has no cuDNN at all (the CUDA
// backend's device check: every CUDA function then fails); where it has,
// cuda/cudnn/'s handle() checks, with the kernel's name.
void check_cudnn_required(const char* who, bool unbuilt_only = false);
// Calls into cuDNN per chainerc kernel name ("conv2d_forward", "relu", ...).
void count_cudnn_call(const char* kernel);
int64_t cudnn_calls(const char* kernel);  // nullptr: all kernels
void reset_cudnn_calls();

}  // namespace chainerc::config
