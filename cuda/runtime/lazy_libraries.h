// cuBLAS, cuRAND, NVRTC and cuDNN are opened on first use (lazy_libraries.cpp).
#pragma once

#include <string>

// CH_CUDA_MAJOR (libnvrtc.so.<major>) and CH_LAZY_NVRTC, from Meson (CH_HAVE_CUDNN:
// -DCH_HAVE_CUDNN=1 where cuda/cudnn/ is built).
#include "ch_cuda_config.h"

namespace chainerc::cuda {

// Why `which` ("cublas", "curand", "nvrtc" or "cudnn") could not be loaded, or "".
std::string load_error(const char* which);

}  // namespace chainerc::cuda
