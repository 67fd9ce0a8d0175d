// nvcc rejects this (min(int64_t, int) is ambiguous): so must the emulator.
// Built by the test 'emulator_rejects_min_int64_int' (should fail).
#include <cuda_runtime.h>

#include <cstdint>

__global__ void k(int64_t* x, int i) { x[0] = min(x[1], i); }
