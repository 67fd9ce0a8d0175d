// nvcc rejects this (more than one instance of "max" matches): so must the
// emulator. Built by the test 'emulator_rejects_max_float_int' (should fail).
#include <cuda_runtime.h>

__global__ void k(float* x) { x[0] = max(x[1], 0); }
