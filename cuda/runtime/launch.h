// The one launch helper: every kernel launch in chainerc goes through
// chainerc::cuda::launch (no `<<<>>>` in op code), which is `<<<>>>` under
// nvcc and the CPU emulator (cuda/emulation/) under -Dcuda-emulation=true.
// Returns the launch's error (cudaGetLastError), which the caller checks.
// A null stream is the current device's engine stream (streams.h).
// Dynamic shared memory is declared with CH_EXTERN_SHARED(T, name).
// Each launch is counted (launch_count.h).
#pragma once

#include <cuda_runtime.h>

#include <functional>
#include <memory>
#include <tuple>
#include <type_traits>
#include <utility>

#include "launch_count.h"
#include "streams.h"

#if defined(CH_CUDA_EMULATED_RUNTIME)

namespace chainerc::cuda {

template <typename... P, typename... A>
cudaError_t launch(void (*kernel)(P...), dim3 grid, dim3 block, size_t shared_bytes,
                   cudaStream_t stream, A&&... args) {
  static_assert(sizeof...(P) == sizeof...(A), "launch: wrong number of kernel arguments");
  launch_counter.fetch_add(1, std::memory_order_relaxed);
  // The parameters as the kernel takes them (by value, converted once, as
  // nvcc does); each thread's call copies them again. Owned by the launch:
  // the emulated stream may run it later (a stream waiting for another, a
  // graph being captured and replayed).
  using Params = std::tuple<std::decay_t<P>...>;
  auto params = std::make_shared<const Params>(std::forward<A>(args)...);
  return emu::launch_grid_owned(
      grid, block, shared_bytes, resolve_stream(stream),
      [kernel, params] { std::apply(kernel, *params); }, reinterpret_cast<const void*>(kernel));
}

}  // namespace chainerc::cuda

#else

#define CH_EXTERN_SHARED(T, name)                               \
  extern __shared__ __align__(16) unsigned char ch_dyn_smem_[]; \
  T* name = reinterpret_cast<T*>(ch_dyn_smem_)

namespace chainerc::cuda {

template <typename... P, typename... A>
cudaError_t launch(void (*kernel)(P...), dim3 grid, dim3 block, size_t shared_bytes,
                   cudaStream_t stream, A&&... args) {
  static_assert(sizeof...(P) == sizeof...(A), "launch: wrong number of kernel arguments");
  launch_counter.fetch_add(1, std::memory_order_relaxed);
  // clang-format off
  kernel<<<grid, block, shared_bytes, resolve_stream(stream)>>>(std::forward<A>(args)...);
  // clang-format on
  return cudaGetLastError();
}

}  // namespace chainerc::cuda

#endif
