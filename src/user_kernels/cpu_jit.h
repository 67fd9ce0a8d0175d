// In-memory C compiler for the CPU path of user kernels: libtcc (Tiny C
// Compiler) compiles generated C into executable memory. Compiled functions
// are cached for the life of the process, keyed by their source; libtcc is
// not thread-safe, so every libtcc call is serialized by one mutex (a cached
// function is then called without it).
#pragma once

#include <string>

namespace chainerc::kernels::cpu_jit {

// The generated entry point (see codegen.h): begin, end, pointers, info.
using KernelFn = void (*)(long long, long long, void* const*, const long long*);

// False when this build has no libtcc (then compile() fails with CH_ERR_UNSUPPORTED).
bool available();

// The `ch_kernel` function of `source`, compiled once per process. A compile
// error is Error(CH_ERR_INVALID_ARGUMENT) naming `kernel_name` and carrying
// the compiler's log; failures are cached too (the same source fails again
// without recompiling).
KernelFn compile(const std::string& source, const std::string& kernel_name);

// Number of distinct sources compiled so far (cache misses), for tests.
long long compile_count();

}  // namespace chainerc::kernels::cpu_jit
