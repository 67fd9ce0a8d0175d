// Index arithmetic of the CUDA op kernels without a 64-bit division per
// element: division by an extent fixed at launch as a multiply-high, an add
// and a shift (FastDivider), and the offsets of an element-wise result's
// operands through their strides (OffsetCalc), with one chain of such
// divisions per element shared by all operands, over axes merged where the
// strides allow. Both come in a 32-bit form, used where every index and
// offset of a launch is below 2^31 (index_fits_32), and a 64-bit one for
// larger arrays. Host code builds them (make_offset_calc); kernels take them
// by value.
#pragma once

#include <ch/common.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

// nvcc's loop unrolling hint, in its device pass only (the host compiler,
// nvcc's host pass included, would warn about the pragma).
#if defined(__CUDA_ARCH__)
#define CH_UNROLL _Pragma("unroll")
#else
#define CH_UNROLL
#endif

namespace chainerc::cuda {

// The product of two 64-bit factors on the host (__extension__: GCC and
// Clang's type, which -Wpedantic would otherwise name).
__extension__ typedef unsigned __int128 uint128_host;

__host__ __device__ __forceinline__ uint32_t mul_high(uint32_t a, uint32_t b) {
#if defined(__CUDA_ARCH__)
  return __umulhi(a, b);
#else
  return static_cast<uint32_t>((static_cast<uint64_t>(a) * b) >> 32);
#endif
}
__host__ __device__ __forceinline__ uint64_t mul_high(uint64_t a, uint64_t b) {
#if defined(__CUDA_ARCH__)
  return __umul64hi(a, b);
#else
  return static_cast<uint64_t>((static_cast<uint128_host>(a) * b) >> 64);
#endif
}

// n / d for a divisor d >= 1 fixed when the launch is prepared, exact for
// every n < 2^(N-1) (N = 32 or 64 bits of U): with s = ceil(log2 d) and
// m = floor(2^N (2^s - d) / d) + 1, n / d = (mul_high(n, m) + n) >> s, where
// mul_high(n, m) < n keeps the sum below 2^N (the round-up method of
// Granlund and Montgomery, "Division by invariant integers using
// multiplication", 1994). d must be below 2^(N-1) too.
template <typename U>
struct FastDivider {
  U d = 1, m = 1;
  uint32_t s = 0;

  FastDivider() = default;
  __host__ explicit FastDivider(U divisor) : d(divisor) {
    using Wide = typename std::conditional<sizeof(U) == 4, uint64_t, uint128_host>::type;
    constexpr int bits = 8 * sizeof(U);
    while ((U{1} << s) < d) ++s;
    m = static_cast<U>(((Wide{1} << bits) * ((Wide{1} << s) - d)) / d + 1);
  }
  __host__ __device__ __forceinline__ U div(U n) const { return (mul_high(n, m) + n) >> s; }
};

// Whether a launch whose flat indices and offsets stay below `limit` can use
// 32-bit index arithmetic (FastDivider<uint32_t> needs n < 2^31).
inline bool index_fits_32(int64_t limit) { return limit <= INT32_MAX; }

// f(uint32_t{}) when every index and offset of a launch stays at most
// `limit`, else f(uint64_t{}): the index type U of the kernel to launch.
template <typename F>
void dispatch_index(int64_t limit, F&& f) {
  if (index_fits_32(limit))
    f(uint32_t{});
  else
    f(uint64_t{});
}

// The offsets (in elements) of K operands at flat index i of a row-major
// result: axes stored innermost first, extent[a] = div[a].d, operand k's
// stride along axis a in stride[a][k] (0 along an axis it is broadcast
// over). The outermost axis needs no division (i is already below its
// extent there), so a result whose axes all merge into one costs none.
template <typename U, int K>
struct OffsetCalc {
  int32_t ndim = 0;  // 0: one element
  FastDivider<U> div[CH_MAX_NDIM];
  U stride[CH_MAX_NDIM][K] = {};

  __host__ __device__ __forceinline__ void get(U i, U (&off)[K]) const {
    CH_UNROLL
    for (int k = 0; k < K; ++k) off[k] = 0;
    // Unrolled with constant axis numbers, so that div and stride are read
    // from the kernel's parameters in place (no copy to local memory).
    CH_UNROLL
    for (int a = 0; a < CH_MAX_NDIM; ++a) {
      if (a >= ndim) break;
      if (a == ndim - 1) {
        CH_UNROLL
        for (int k = 0; k < K; ++k) off[k] += i * stride[a][k];
        break;
      }
      const U q = div[a].div(i);
      const U r = i - q * div[a].d;
      CH_UNROLL
      for (int k = 0; k < K; ++k) off[k] += r * stride[a][k];
      i = q;
    }
  }
  // One operand's offset (K == 1).
  __host__ __device__ __forceinline__ U operator()(U i) const {
    U off[K];
    get(i, off);
    return off[0];
  }
};

// The OffsetCalc of a result of `ndim` row-major axes `extent` where operand
// k has strides strides[k][0 .. ndim). Axes of extent 1 are dropped, and
// neighbouring axes merged where every operand's strides continue across
// them (each stride of the outer axis is the inner's times the inner
// extent: contiguous runs, and axes every operand is broadcast over alike).
template <typename U, int K>
__host__ OffsetCalc<U, K> make_offset_calc(int32_t ndim, const int64_t* extent,
                                           const int64_t* const (&strides)[K]) {
  int64_t ext[CH_MAX_NDIM], str[CH_MAX_NDIM][K];
  int32_t n = 0;  // merged axes, innermost first
  for (int32_t d = ndim - 1; d >= 0; --d) {
    if (extent[d] == 1) continue;
    bool merge = n > 0;
    for (int k = 0; k < K && merge; ++k) merge = strides[k][d] == str[n - 1][k] * ext[n - 1];
    if (merge) {
      ext[n - 1] *= extent[d];
    } else {
      ext[n] = extent[d];
      for (int k = 0; k < K; ++k) str[n][k] = strides[k][d];
      ++n;
    }
  }
  OffsetCalc<U, K> c;
  c.ndim = n;
  for (int32_t a = 0; a < n; ++a) {
    c.div[a] = FastDivider<U>(static_cast<U>(ext[a]));
    for (int k = 0; k < K; ++k) c.stride[a][k] = static_cast<U>(str[a][k]);
  }
  return c;
}

// The largest offset operand `k` reaches over the result (0 when empty).
inline int64_t largest_offset(int32_t ndim, const int64_t* extent, const int64_t* stride) {
  int64_t off = 0;
  for (int32_t d = 0; d < ndim; ++d) {
    if (extent[d] == 0) return 0;
    off += (extent[d] - 1) * stride[d];
  }
  return off;
}

}  // namespace chainerc::cuda
