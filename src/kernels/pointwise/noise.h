// Per-element math of dropout's mask. One definition, built by the host
// compiler into the CPU backend and by nvcc into the CUDA kernels, so the
// mask of a seed is the same on every device and whatever the thread split.
#pragma once

#include <cmath>
#include <cstdint>

#include "kernels/host_device.h"

namespace chainerc::pointwise {

// splitmix64: a counter-based stream, so every element's draw depends only
// on (seed, index).
CH_HOST_DEVICE uint64_t splitmix64(uint64_t z) {
  z += 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// Dropout's mask element i: u = 53 random bits of (seed, i) / 2^53, uniform
// in [0, 1); the element is kept, as `scale` = 1 / (1 - ratio), when
// u >= ratio (probability 1 - ratio), i.e. when the bits reach `threshold`
// = ceil(ratio * 2^53) (dropout_threshold); else it is 0.
struct DropoutMask {
  uint64_t seed;
  uint64_t threshold;
  template <typename T>
  CH_HOST_DEVICE T operator()(int64_t i, T scale) const {
    const uint64_t bits = splitmix64(seed + static_cast<uint64_t>(i) * 0x9e3779b97f4a7c15ULL) >> 11;
    return bits >= threshold ? scale : T(0);
  }
};

// DropoutMask's threshold for a ratio in [0, 1) (host).
inline uint64_t dropout_threshold(double ratio) {
  return static_cast<uint64_t>(std::ceil(std::ldexp(ratio, 53)));
}

}  // namespace chainerc::pointwise
