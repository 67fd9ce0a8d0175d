// Counters of the work the CUDA backend queues, for bench/gpu's kernels per
// training step: launch() (launch.h) counts each kernel it launches, gemm()
// (libraries.cpp) each cuBLAS call. One relaxed atomic add each; every device
// together. cuBLAS's and cuDNN's own kernels are not counted as launches (a
// cuBLAS GEMM is usually one kernel, sometimes two with a split-K reduction).
// Plain C++: included by code the host compiler builds as well as by nvcc's.
#pragma once

#include <atomic>
#include <cstdint>

namespace chainerc::cuda {

inline std::atomic<std::uint64_t> launch_counter{0};
inline std::atomic<std::uint64_t> gemm_call_counter{0};

// Kernels launched through launch() since the process started.
inline std::uint64_t launch_count() { return launch_counter.load(std::memory_order_relaxed); }
// cuBLAS GEMM calls made by gemm() since the process started.
inline std::uint64_t gemm_call_count() { return gemm_call_counter.load(std::memory_order_relaxed); }

}  // namespace chainerc::cuda
