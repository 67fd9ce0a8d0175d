// The on-disk cache of compiled user kernels: one file per key (the hash of
// generated source, compiler options, architecture and compiler version) in a
// core/disk_cache.h directory, so a collision, a truncated or a corrupt file
// reads as a miss (and is rebuilt), never as wrong code, and processes sharing
// the directory never see a partial file.
#pragma once

#include <cstdint>
#include <string>

namespace chainerc::kernels::disk_cache {

// $CH_KERNEL_CACHE_DIR, else $XDG_CACHE_HOME/chainerc/kernels, else
// $HOME/.cache/chainerc/kernels; "" (no disk cache) when none is set.
std::string directory();

// 64-bit FNV-1a of `data` from `seed`.
uint64_t hash64(const std::string& data, uint64_t seed = 0xcbf29ce484222325ULL);

// The file that holds `key` in `dir`.
std::string path_for(const std::string& dir, const std::string& key);

// True and *payload set when `dir` holds a valid entry for exactly `key`.
bool load(const std::string& dir, const std::string& key, std::string* payload);

// Stores the entry (creating `dir`); false on any failure (the cache is only
// an optimization: callers go on without it).
bool store(const std::string& dir, const std::string& key, const std::string& payload);

}  // namespace chainerc::kernels::disk_cache
