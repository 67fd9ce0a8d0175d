// The first lines of every user kernel the emulated NVRTC compiles
// (cuda/emulation/user_kernels.cpp): the generated CUDA source
// (src/user_kernels/codegen.cpp, the very string NVRTC gets) follows this
// header, then CH_EMU_USER_KERNEL_ENTRY(<kernel name>). The host C++
// compiler builds the three into a shared object that runs the kernel on the
// emulator's fibers of libchainerc, reached through the table of
// user_kernel_abi.h (never through symbol lookup: libchainerc's symbols are
// hidden). Included in exactly one translation unit per object.
#pragma once

#if !defined(CH_EMU_USER_KERNEL)
#error "user_kernel_dso.h is for user kernels compiled by the emulated NVRTC"
#endif

#include <cuda_runtime.h>

#include <cstdio>  // device printf, which NVRTC declares without a header

#include "user_kernel_abi.h"

// What NVRTC offers a kernel without any #include, beyond the emulated
// device language: the math functions' float overloads in the global
// namespace (exp and abs of a float are floats, as on the GPU; the C
// library's int abs(int) alone would truncate), and isnan / isinf /
// isfinite / signbit of float and double only (isnan of an int is ambiguous
// here, as NVRTC refuses it).
using std::abs;
using std::acos;
using std::asin;
using std::atan;
using std::atan2;
using std::cbrt;
using std::ceil;
using std::copysign;
using std::cos;
using std::cosh;
using std::erf;
using std::erfc;
using std::exp;
using std::exp2;
using std::expm1;
using std::fabs;
using std::floor;
using std::fmax;
using std::fmin;
using std::fmod;
using std::hypot;
using std::log;
using std::log10;
using std::log1p;
using std::log2;
using std::pow;
using std::round;
using std::sin;
using std::sinh;
using std::sqrt;
using std::tan;
using std::tanh;
using std::trunc;
#define CH_EMU_FP_CLASS(fn, builtin)             \
  inline bool fn(float x) { return builtin(x); } \
  inline bool fn(double x) { return builtin(x); }
CH_EMU_FP_CLASS(isnan, __builtin_isnan)
CH_EMU_FP_CLASS(isinf, __builtin_isinf)
CH_EMU_FP_CLASS(isfinite, __builtin_isfinite)
CH_EMU_FP_CLASS(signbit, __builtin_signbit)
#undef CH_EMU_FP_CLASS

// The emulator's device-side functions (declared in cuda_emulation.h),
// forwarded to libchainerc through the table.
namespace chainerc::cuda::emu {
namespace {
const UserKernelHost* g_host = nullptr;
}
thread_local FiberState* const* uk_fiber = nullptr;
thread_local BlockState* uk_block = nullptr;

void syncthreads(const char* file, int line) { g_host->syncthreads(file, line); }
uint64_t warp_collective(WarpOp op, unsigned mask, uint64_t value, int arg, int width) {
  return g_host->warp_collective(op, mask, value, arg, width);
}
unsigned active_mask() { return g_host->active_mask(); }
void trap(const char* why) {
  g_host->trap(why);
  __builtin_unreachable();
}
unsigned char* dynamic_shared() { return g_host->dynamic_shared(); }
}  // namespace chainerc::cuda::emu

extern "C" __attribute__((visibility("default"))) unsigned ch_emu_uk_init(
    const chainerc::cuda::emu::UserKernelHost* host) {
  if (host && host->abi == chainerc::cuda::emu::kUserKernelAbi) chainerc::cuda::emu::g_host = host;
  return chainerc::cuda::emu::kUserKernelAbi;
}

// After the generated source: the launch entry for the kernel `kernel`
// (`extern "C" __global__ void kernel(long long, ch_args)`).
#define CH_EMU_USER_KERNEL_ENTRY(kernel)                                                         \
  namespace {                                                                                    \
  struct ChEmuUkContext {                                                                        \
    long long count;                                                                             \
    const ch_args* args;                                                                         \
  };                                                                                             \
  void ch_emu_uk_body(void* c) {                                                                 \
    const ChEmuUkContext* x = static_cast<const ChEmuUkContext*>(c);                             \
    kernel(x->count, *x->args); /* by value: each thread its copy, as on a GPU */                \
  }                                                                                              \
  }                                                                                              \
  extern "C" __attribute__((visibility("default"))) cudaError_t ch_emu_uk_launch(                \
      long long count, const void* args, size_t args_size, unsigned grid, unsigned block,        \
      void* stream) {                                                                            \
    namespace e = ::chainerc::cuda::emu;                                                         \
    if (!e::g_host || args_size != sizeof(ch_args)) return cudaErrorInvalidValue;                \
    e::uk_fiber = e::g_host->fiber_slot();                                                       \
    e::uk_block = e::g_host->block_state();                                                      \
    ChEmuUkContext ctx{count, static_cast<const ch_args*>(args)};                                \
    return e::g_host->launch_grid(dim3(grid), dim3(block), 0, static_cast<cudaStream_t>(stream), \
                                  ch_emu_uk_body, &ctx);                                         \
  }
