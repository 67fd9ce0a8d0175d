// cuda/runtime/fill_kernels.cu compiled by the host compiler for the emulator.
#include "../runtime/fill_kernels.cu"

#include <cuda_runtime.h>
