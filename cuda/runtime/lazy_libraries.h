// cuBLAS, cuRAND, NVRTC and cuDNN are opened on first use (lazy_libraries.cpp).
#pragma once

#include <string>

// CH_CUDA_MAJOR (libnvrtc.so.<major>), CH_LAZY_NVRTC and CH_HAVE_CUDNN, from Meson.
#include "ch_cuda_config.h"

namespace chainerc::cuda {

// Why `which` ("cublas", "curand", "nvrtc" or "cudnn") could not be loaded, or "".
std::string load_error(const char* which);

}  // namespace chainerc::cuda
