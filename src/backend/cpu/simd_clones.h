// CH_SIMD_CLONES: compile a loop once per x86-64 level (x86-64-v4: AVX-512,
// x86-64-v3: AVX2, and the baseline the library is built for); the dynamic
// loader picks the copy for the CPU at start (GCC's target_clones, an IFUNC).
// The library itself is built for the baseline so that it runs anywhere; the
// loops that touch every element of a step (pointwise functions, optimizer
// updates) would otherwise run four floats at a time on every machine.
//
// The copies give the same bits: the library is compiled with
// -ffp-contract=off (src/meson.build), so GCC never fuses a * b + c into an
// FMA where the ISA has one; only the vector width differs.
// Off under ThreadSanitizer (CH_NO_TARGET_CLONES: IFUNC resolvers run before
// its runtime is up) and with compilers other than GCC.
#pragma once

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(CH_NO_TARGET_CLONES)
#define CH_SIMD_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define CH_SIMD_CLONES
#endif
