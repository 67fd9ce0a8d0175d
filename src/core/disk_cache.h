// A directory of keyed files that only save work (compiled user kernels,
// measured GEMM choices): one file per key, which repeats the whole key and a
// checksum, so a collision, a truncated, corrupt or stale file reads as a
// miss, never as another key's entry. Sizes in a file are checked against the
// file's own, never trusted, and a file larger than its kind allows is not
// read. Writes go to a temporary file renamed into place, so processes sharing
// the directory never see a partial file. Every failure (no directory, a
// read-only one, an unreadable file) is a miss or a skipped write: callers go
// on without the cache.
//
// Trust: a kernel cache's payloads are loaded as code, so an entry is
// believed only if nobody but this user could have written it. The
// directory (created 0700) is used only when it is this user's and writable
// by nobody else, and every ancestor of its resolved path is this user's or
// root's and not writable by others unless sticky (/tmp); an entry only when
// it is a regular file (opened without following a symlink or blocking on a
// FIFO), this user's, and writable by nobody else. Otherwise a warning on
// stderr (once per process and reason) and no cache. The checksum is not
// keyed: it tells accidents (truncation, collisions) apart; it cannot tell an
// attacker, which the ownership checks exclude instead (anyone who can write
// as this user can already run code as this user).
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
