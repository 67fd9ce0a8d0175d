// Per-device library state of the CUDA backend, created lazily on first use:
// a cuBLAS handle (its workspace from the device's caching allocator) and a
// cuRAND generator seeded from CH_SEED (mixed with the device index, so each
// device draws a different, reproducible sequence) or from entropy.
// Both work on the device's default stream.
#pragma once

#include <cublas_v2.h>
#include <curand.h>

#include <cstdint>
#include <mutex>

namespace chainerc::cuda {

// Borrowed; valid for the life of the process. Throws Error(CH_ERR_DEVICE).
cublasHandle_t cublas_handle(int32_t device);
// Borrowed; use it only while `lock` (which this locks) is held.
curandGenerator_t curand_generator(int32_t device, std::unique_lock<std::mutex>& lock);
// Reseed device `device`'s generator from `seed` as CH_SEED=seed would (the
// seed's cuda.seed): the generator starts from device_seed(seed, device).
void seed_generator(int32_t device, uint64_t seed);
// The seed device `device` starts from when CH_SEED is `base`.
uint64_t device_seed(uint64_t base, int32_t device);

}  // namespace chainerc::cuda
