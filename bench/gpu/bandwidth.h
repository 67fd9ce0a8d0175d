// gpu_bench's bandwidth table (bench/gpu/bandwidth.cpp): chainerc's element-wise kernels,
// reductions and BatchNormalization on 64M float32 elements against a device-to-device copy.
#pragma once

#include <cstdint>

namespace gpu_bench {

// Prints the table for CUDA device `device` (the current device); smoke: small shapes, one
// call each, nothing timed. Results are checked against the CPU backend; a mismatch exits.
void bench_bandwidth(int32_t device, bool smoke);

}  // namespace gpu_bench
