// Opening the files the library reads and writes so that the open itself can
// never block: a FIFO without a writer (reads) or a reader (writes), a
// terminal or a device blocks in open(2) before any check could run. Every
// open is O_NONBLOCK (which open(2) honours for FIFOs and devices and ignores
// for regular files), then fstat on the descriptor (not the name, so nothing
// can be swapped in between) accepts a regular file only; the descriptor is
// returned in blocking mode. Every file the library opens by name goes
// through here (IDX, .npz, the disk caches).
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/types.h>

#include <string>

namespace chainerc::files {

// What the file is, for messages: "a FIFO", "a directory", "a character
// device", ...
const char* type_name(mode_t mode);

// Options of an open.
struct OpenOptions {
  // openat(2)'s directory (AT_FDCWD: `path` as it is).
  int dir_fd = AT_FDCWD;
  // O_NOFOLLOW: a symlink in the last component is refused (the caches).
  bool no_follow = false;
};

// Opens `path` read-only. Returns the descriptor (O_CLOEXEC, blocking) and
// fills *st, or -1 with *why saying what was wrong ("is a FIFO, not a regular
// file", strerror) when it cannot be opened or is not a regular file.
int open_for_read(const std::string& path, std::string* why, struct stat* st = nullptr,
                  const OpenOptions& options = {});

// Opens `path` write-only, creating it with `mode` (before the umask) when
// absent, or, with `exclusive`, only creating it (O_EXCL). An existing file
// must be a regular file; it is truncated to 0 bytes only after that check
// (so a device in its place is never truncated). -1 and *why on failure.
int open_for_write(const std::string& path, mode_t mode, std::string* why, bool exclusive = false,
                   const OpenOptions& options = {});

}  // namespace chainerc::files
