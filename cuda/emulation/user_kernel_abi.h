// The interface between libchainerc and a user kernel compiled at run time
// by the emulated NVRTC (cuda/emulation/user_kernels.cpp) into a shared
// object. libchainerc's symbols are hidden (the emulator's thread state,
// barrier and warp functions are not exported), so the object never resolves
// them by name: libchainerc passes a table of function pointers once after
// dlopen (ch_emu_uk_init), and the launching thread's state pointers at each
// launch. The object exports only the extern "C" names below.
#pragma once

#include <cstddef>
#include <cstdint>

#include "cuda_emulation.h"

namespace chainerc::cuda::emu {

// Bumped whenever this table or the entry points change.
constexpr unsigned kUserKernelAbi = 1;

struct UserKernelHost {
  unsigned abi;
  // The calling thread's current fiber slot (&t_fiber) and block state (&t_block).
  FiberState* const* (*fiber_slot)();
  BlockState* (*block_state)();
  void (*syncthreads)(const char* file, int line);
  uint64_t (*warp_collective)(WarpOp op, unsigned mask, uint64_t value, int arg, int width);
  unsigned (*active_mask)();
  void (*trap)(const char* why);  // does not return
  unsigned char* (*dynamic_shared)();
  cudaError_t (*launch_grid)(dim3 grid, dim3 block, size_t shared_bytes, cudaStream_t stream,
                             void (*body)(void*), void* ctx);
};

}  // namespace chainerc::cuda::emu

extern "C" {
// Stores the table; returns the object's kUserKernelAbi.
typedef unsigned (*ch_emu_uk_init_fn)(const chainerc::cuda::emu::UserKernelHost* host);
// Runs the kernel as `grid` blocks of `block` threads with the kernel's
// arguments (count, *(const ch_args*)args) on the calling thread; the
// emulator's launch status.
typedef cudaError_t (*ch_emu_uk_launch_fn)(long long count, const void* args, size_t args_size,
                                           unsigned grid, unsigned block, void* stream);
}
