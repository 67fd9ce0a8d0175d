#include "open_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace chainerc::files {
namespace {

// Back to blocking mode, fstat, and the regular-file check; closes on failure.
int finish(int fd, std::string* why, struct stat* out) {
  struct stat st {};
  if (fstat(fd, &st) != 0) {
    *why = std::string("fstat: ") + std::strerror(errno);
    ::close(fd);
    return -1;
  }
  if (!S_ISREG(st.st_mode)) {
    *why = std::string("it is ") + type_name(st.st_mode) + ", not a regular file";
    ::close(fd);
    errno = S_ISDIR(st.st_mode) ? EISDIR : EINVAL;
    return -1;
  }
  const int fl = fcntl(fd, F_GETFL);
  if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) != 0) {
    *why = std::string("fcntl: ") + std::strerror(errno);
    ::close(fd);
    return -1;
  }
  if (out) *out = st;
  return fd;
}

int do_open(const std::string& path, int flags, mode_t mode, std::string* why,
            const OpenOptions& o) {
  flags |= O_NONBLOCK | O_CLOEXEC | O_NOCTTY;
  if (o.no_follow) flags |= O_NOFOLLOW;
  int fd;
  do {
    fd = ::openat(o.dir_fd, path.c_str(), flags, mode);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) {
    if (errno == ELOOP && o.no_follow)
      *why = "it is a symbolic link (not followed here)";
    else if (errno == ENXIO)
      *why = "it is a FIFO or socket with no reader, not a regular file";
    else
      *why = std::strerror(errno);
  }
  return fd;
}

}  // namespace

const char* type_name(mode_t mode) {
  if (S_ISREG(mode)) return "a regular file";
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISLNK(mode)) return "a symbolic link";
  return "a special file";
}

int open_for_read(const std::string& path, std::string* why, struct stat* st,
                  const OpenOptions& options) {
  const int fd = do_open(path, O_RDONLY, 0, why, options);
  return fd < 0 ? -1 : finish(fd, why, st);
}

int open_for_write(const std::string& path, mode_t mode, std::string* why, bool exclusive,
                   const OpenOptions& options) {
  const int fd = do_open(path, O_WRONLY | O_CREAT | (exclusive ? O_EXCL : 0), mode, why, options);
  if (fd < 0) return -1;
  if (finish(fd, why, nullptr) < 0) return -1;
  if (ftruncate(fd, 0) != 0) {
    *why = std::string("ftruncate: ") + std::strerror(errno);
    ::close(fd);
    return -1;
  }
  return fd;
}

}  // namespace chainerc::files
