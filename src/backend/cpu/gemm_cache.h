// The on-disk cache of gemm.cpp's choices: one small file per choice in a
// core/disk_cache.h directory (the file repeats its whole key and a checksum,
// sizes are never trusted, writes are renamed into place). Every failure is a
// miss or a skipped write: the cache only saves measuring.
#pragma once

#include <string>

namespace chainerc::cpu::gemm_cache {

// $CH_GEMM_CACHE_DIR, else $XDG_CACHE_HOME/chainerc/gemm, else
// $HOME/.cache/chainerc/gemm; "" (no disk cache) when CH_GEMM_CACHE=0 or
// none of them is set.
std::string directory_from_environment();

// What makes a measured choice valid on this CPU: vendor, family, model,
// stepping, model name and the instruction-set flags the libraries dispatch
// on (from /proc/cpuinfo), e.g. "vendor_id=AuthenticAMD; cpu family=25; ...;
// isa=avx avx2 avx512bw ... fma".
std::string cpu_identity();

// The largest file read (a choice's file is a few hundred bytes).
constexpr size_t kMaxFileBytes = 64 * 1024;

// True and *payload set when `dir` holds a valid entry for exactly `key`.
bool load(const std::string& dir, const std::string& key, std::string* payload);

// Stores the entry (creating `dir`); false on any failure.
bool store(const std::string& dir, const std::string& key, const std::string& payload);

// The file that holds `key` in `dir` (for the tests).
std::string path_for(const std::string& dir, const std::string& key);

}  // namespace chainerc::cpu::gemm_cache
