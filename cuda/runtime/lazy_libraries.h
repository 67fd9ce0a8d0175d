// cuBLAS, cuRAND and NVRTC are opened on first use (lazy_libraries.cpp).
#pragma once

#include <string>

// CH_CUDA_MAJOR (libnvrtc.so.<major>) and CH_LAZY_NVRTC, from Meson.
#include "ch_cuda_config.h"

namespace chainerc::cuda {

// Why `which` ("cublas", "curand" or "nvrtc") could not be loaded, or "".
std::string load_error(const char* which);

}  // namespace chainerc::cuda
