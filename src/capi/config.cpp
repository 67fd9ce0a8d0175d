// C API: process-wide settings.
#include "core/config.h"

#include <cstring>
#include <string>

#include "api.h"
#include "backend/cpu/gemm.h"
#include "backend/cpu/parallel.h"
#include "core/random.h"
#include "kernels/registry.h"

using namespace chainerc;

extern "C" {

void ch_config_set_train(int32_t train) { config::set_train_default(train != 0); }
int32_t ch_config_train(void) { return config::train_default() ? 1 : 0; }

ch_status ch_config_set_num_threads(int32_t n) {
  CH_API_BEGIN
  if (n < 1) fail(CH_ERR_INVALID_ARGUMENT, __func__, ": n = ", n, "; at least 1 thread is needed");
  cpu::set_num_threads(n);
  CH_API_END
}

int32_t ch_config_num_threads(void) {
  try {
    return cpu::num_threads();
  } catch (...) {
    return 1;
  }
}

void ch_config_seed(uint64_t seed) { random::seed(seed); }

void ch_config_set_use_cudnn(int32_t use_cudnn) { config::set_use_cudnn(use_cudnn != 0); }
int32_t ch_config_use_cudnn(void) { return config::use_cudnn() ? 1 : 0; }

static_assert(int32_t{config::kCudnnInUse} == CH_CUDNN_IN_USE &&
                  int32_t{config::kCudnnSwitchedOff} == CH_CUDNN_SWITCHED_OFF &&
                  int32_t{config::kCudnnNotBuilt} == CH_CUDNN_NOT_BUILT &&
                  int32_t{config::kCudnnNotFound} == CH_CUDNN_NOT_FOUND &&
                  int32_t{config::kCudnnVersionMismatch} == CH_CUDNN_VERSION_MISMATCH &&
                  int32_t{config::kCudnnNoDevice} == CH_CUDNN_NO_DEVICE &&
                  int32_t{config::kCudnnInitFailed} == CH_CUDNN_INIT_FAILED,
              "core/config.h's CudnnState and include/ch/config.h's CH_CUDNN_* agree");

int32_t ch_config_cudnn(const char** reason, int32_t* version) {
  thread_local std::string why;
  try {
    // The backends' kernel lists register cuDNN's probe (cuda/cudnn/).
    kernels::register_all_kernels();
    config::CudnnStatus st = config::cudnn_status();
    why = std::move(st.reason);
    if (reason) *reason = why.c_str();
    if (version) *version = st.version;
    return st.state;
  } catch (...) {
    why = "the cuDNN probe failed";
    if (reason) *reason = why.c_str();
    if (version) *version = 0;
    return CH_CUDNN_INIT_FAILED;
  }
}
int64_t ch_config_cudnn_calls(const char* function) { return config::cudnn_calls(function); }
void ch_config_reset_cudnn_calls(void) { config::reset_cudnn_calls(); }

void ch_config_set_allow_tf32(int32_t allow_tf32) { config::set_allow_tf32(allow_tf32 != 0); }
int32_t ch_config_allow_tf32(void) { return config::allow_tf32() ? 1 : 0; }

void ch_config_set_deterministic(int32_t deterministic) {
  config::set_deterministic(deterministic != 0);
}
int32_t ch_config_deterministic(void) { return config::deterministic() ? 1 : 0; }

const char* ch_config_blas(void) {
  try {
    return cpu::blas_name();
  } catch (...) {
    return "";
  }
}

ch_status ch_config_set_gemm(const char* library) {
  CH_API_BEGIN
  cpu::force_gemm_library(library);
  CH_API_END
}

const char* ch_config_gemm(void) {
  try {
    const std::string forced = cpu::forced_gemm_library();
    for (int i = 0; i < cpu::kGemmLibraries; ++i)
      if (forced == cpu::gemm_library_name(cpu::GemmLibrary(i)))
        return cpu::gemm_library_name(cpu::GemmLibrary(i));
  } catch (...) {  // CH_GEMM names no library: GEMMs fail; report "auto"
  }
  return "auto";
}

ch_status ch_config_set_gemm_cache(const char* directory) {
  CH_API_BEGIN
  constexpr size_t kMaxPath = 4096;  // PATH_MAX on Linux, terminating zero included
  if (directory && std::strlen(directory) >= kMaxPath)
    fail(CH_ERR_INVALID_ARGUMENT, __func__, ": the directory's name is ", std::strlen(directory),
         " bytes long; at most ", kMaxPath - 1, " are allowed");
  cpu::set_gemm_cache_directory(directory);
  CH_API_END
}

const char* ch_config_gemm_cache(void) {
  thread_local std::string directory;
  try {
    directory = cpu::gemm_cache_directory();
  } catch (...) {
    directory.clear();
  }
  return directory.c_str();
}

}  // extern "C"
