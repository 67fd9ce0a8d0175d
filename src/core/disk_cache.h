// A directory of keyed files that only save work (compiled user kernels,
// measured GEMM choices): one file per key, which repeats the whole key and a
// checksum, so a collision, a truncated, corrupt or stale file reads as a
// miss, never as another key's entry. Sizes in a file are checked against the
// file's own, never trusted, and a file larger than its kind allows is not
// read. Writes go to a temporary file renamed into place, so processes sharing
// the directory never see a partial file. Every failure (no directory, a
// read-only one, an unreadable file) is a miss or a skipped write: callers go
// on without the cache.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace chainerc::disk_cache {

// What distinguishes one cache's files from another's.
struct Kind {
  char magic[8];          // the file's first bytes
  const char* extension;  // of the file name, e.g. ".cubin"
  size_t max_bytes;       // a larger file is a miss
};

// $<dir_variable> when set, else $XDG_CACHE_HOME/chainerc/<subdir>, else
// $HOME/.cache/chainerc/<subdir>; "" (no disk cache) when none is set.
std::string directory(const char* dir_variable, const char* subdir);

// 64-bit FNV-1a of `data` from `seed`.
uint64_t hash64(const std::string& data, uint64_t seed = 0xcbf29ce484222325ULL);

// The file that holds `key` in `dir`.
std::string path_for(const Kind& kind, const std::string& dir, const std::string& key);

// True and *payload set when `dir` holds a valid entry for exactly `key`.
bool load(const Kind& kind, const std::string& dir, const std::string& key, std::string* payload);

// Stores the entry (creating `dir`); false on any failure.
bool store(const Kind& kind, const std::string& dir, const std::string& key,
           const std::string& payload);

}  // namespace chainerc::disk_cache
