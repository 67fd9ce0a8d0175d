// Source generation for user kernels: the same kernel text becomes a C
// function (compiled in memory by libtcc for the CPU) or a CUDA __global__
// function (compiled by NVRTC). Both read one argument block:
//   void* p[]       one pointer per parameter (inputs, then outputs)
//   long long info[] the index arithmetic (layouts below)
// Each parameter has an access mode, part of the specialization:
//   'C' contiguous over the iteration space (index i)
//   'S' a single element (broadcast scalar)
//   'G' general broadcast: offset from strides in info
//   'R' raw: a pointer to the whole array, indexed by the user
//   'L' (reductions) reduced elements at a constant stride
#pragma once

#include <string>

#include "user_kernel.h"

namespace chainerc::kernels {

enum class Target { C, Cuda };

// Elementwise info layout: [ndim, shape[ndim], then for each 'G' param in order: strides[ndim]].
// The C entry point is `void ch_kernel(long long begin, long long end, void* const* p, const long
// long* info)`; the CUDA one `extern "C" __global__ void <name>(long long n, ch_args a)`.
std::string elementwise_source(const ElementwiseKernel& k, const TypeMap& types,
                               const std::string& modes, Target target);

// Reduction info layout: [nk, kept shape[nk], nr, reduced shape[nr], reduce_size,
// then for each non-raw input: kept strides[nk], reduced strides[nr]].
// Inputs use mode 'L' (offset = base + k * reduced stride of the last reduced axis)
// or 'G' (general) or 'R'. Outputs are always contiguous over the kept shape.
// C entry point: `void ch_kernel(long long out_begin, long long out_end, void* const* p,
// const long long* info)`; CUDA: one block per output, `<name>(long long out_n, ch_args a)`.
std::string reduction_source(const ReductionKernel& k, const TypeMap& types, DType reduce_type,
                             const std::string& modes, Target target);

// Longest info block the CUDA argument struct carries (CH_MAX_NDIM axes).
constexpr int kMaxInfo(int n_params) { return 4 + 2 * CH_MAX_NDIM + n_params * 2 * CH_MAX_NDIM; }
// Threads per block of the CUDA reduction.
constexpr int kReduceBlock = 256;

}  // namespace chainerc::kernels
