// Compiles under the CUDA emulator as under nvcc: CUDA's min/max overloads.
#include <cuda_runtime.h>

#include <cstdint>

__global__ void k(float* x, int* i, int64_t* l) {
  x[0] = max(x[1], 0.0f) + min(x[2], 1.0f) + max(x[3], 2.0);
  i[0] = max(i[1], 0) + min(i[2], 3);
  l[0] = max(l[1], int64_t{0});
}
