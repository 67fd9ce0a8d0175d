// The engine's random numbers (parameter initialisation, dropout masks,
// shuffling in the examples): one process-wide generator, seeded from the
// environment variable CH_SEED when set, else from std::random_device, and
// reseedable through the API for reproducible runs.
#pragma once

#include <cstdint>

#include "array.h"

namespace chainerc::random {

// The decimal integer in CH_SEED when it is set and valid, else one drawn from
// std::random_device: the starting seed of the CPU generator, and from which
// each device's generator derives its own.
uint64_t initial_seed();
void seed(uint64_t s);
// Fill a float array with N(mean, stddev^2) or U[low, high) samples.
void fill_normal(Array& a, double mean, double stddev);
void fill_uniform(Array& a, double low, double high);
// A uniformly drawn 64-bit value (for permutations and host-side sampling).
uint64_t next_u64();

// n samples from the CPU generator into dst (float32 or float64): N(a, b^2)
// when `normal`, else U[a, b). What the CPU backend's fill_random runs.
void host_samples(void* dst, DType dtype, int64_t n, bool normal, double a, double b);

}  // namespace chainerc::random
