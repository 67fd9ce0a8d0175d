#include "disk_cache.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>

#include "open_file.h"

namespace chainerc::disk_cache {
namespace {

constexpr size_t kHeader = 8 + 3 * 8;  // magic, key length, payload length, checksum

void put_u64(std::string& s, uint64_t v) {
  for (int i = 0; i < 8; ++i) s.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
uint64_t get_u64(const char* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i)
    v |= static_cast<uint64_t>(static_cast<unsigned char>(p[i])) << (8 * i);
  return v;
}

uint64_t checksum(const std::string& key, const std::string& payload) {
  return hash64(payload, hash64(key));
}

// Creates the missing components of `dir` owner-only (0700: mkdir does not
// change existing ones).
void make_dirs(const std::string& dir) {
  size_t pos = 0;
  while (pos != std::string::npos) {
    pos = dir.find('/', pos + 1);
    const std::string partial = dir.substr(0, pos);
    if (partial.empty()) continue;
    if (mkdir(partial.c_str(), 0700) != 0 && errno != EEXIST) return;
  }
}

// Says, once per process and message, that a cache is not used and why.
void warn_once(const std::string& what) {
  static std::mutex mutex;
  static std::set<std::string> said;
  std::lock_guard<std::mutex> lock(mutex);
  if (!said.insert(what).second) return;
  std::fprintf(stderr, "chainerc: %s; going on without it\n", what.c_str());
}

// Whether a file or directory of `st` could have been written by someone
// other than this user: another owner, or group or others may write.
// `sticky_ok`: a directory such as /tmp (others may write, but not remove or
// rename what they do not own) is fine as an ancestor.
const char* untrusted(const struct stat& st, bool root_ok, bool sticky_ok) {
  const uid_t me = geteuid();
  if (st.st_uid != me && !(root_ok && st.st_uid == 0)) return "is owned by another user";
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) && !(sticky_ok && (st.st_mode & S_ISVTX)))
    return "is writable by other users";
  return nullptr;
}

// A descriptor of `dir` when it is a directory that only this user (and
// root, above it) can change; -1 after a warning otherwise. The path is
// resolved first (symlinks included), then every ancestor of the result must
// be owned by this user or root and not writable by others unless sticky, and
// the directory itself owned by this user and writable by nobody else.
int open_trusted_dir(const std::string& dir, const char* why_prefix) {
  char real[PATH_MAX];
  if (!realpath(dir.c_str(), real)) return -1;  // absent: a miss, no warning
  const std::string path = real;
  for (size_t slash = 0; slash != std::string::npos && slash < path.size();
       slash = path.find('/', slash + 1)) {
    const std::string up = slash == 0 ? "/" : path.substr(0, slash);  // an ancestor
    struct stat st {};
    if (lstat(up.c_str(), &st) != 0) return -1;
    if (const char* why = untrusted(st, true, true)) {
      warn_once(std::string(why_prefix) + " '" + dir + "' is not used: its ancestor '" + up + "' " +
                why);
      return -1;
    }
  }
  const int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return -1;
  struct stat st {};
  const char* why = fstat(fd, &st) != 0 ? "cannot be examined" : untrusted(st, false, false);
  if (why) {
    warn_once(std::string(why_prefix) + " '" + dir + "' is not used: it " + why +
              " (make it this user's, mode 0700, or choose another)");
    ::close(fd);
    return -1;
  }
  return fd;
}

struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

bool write_all(int fd, const std::string& data) {
  size_t done = 0;
  while (done < data.size()) {
    const ssize_t w = ::write(fd, data.data() + done, data.size() - done);
    if (w < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    done += static_cast<size_t>(w);
  }
  return true;
}

// Reads the entry `name` in the directory `dir_fd`: a regular file (not a
// symlink, FIFO or device: opened without following or blocking) of at most
// `limit` bytes that only this user can write; false when it is not one,
// cannot be read, or changes size while read.
bool read_entry(int dir_fd, const std::string& name, const std::string& shown, size_t limit,
                std::string* out) {
  std::string why;
  struct stat st {};
  files::OpenOptions o;
  o.dir_fd = dir_fd;
  o.no_follow = true;
  const int fd = files::open_for_read(name, &why, &st, o);
  if (fd < 0) {
    if (errno != ENOENT) warn_once("the cache entry '" + shown + "' is not used: " + why);
    return false;
  }
  if (const char* bad = untrusted(st, false, false)) {
    warn_once("the cache entry '" + shown + "' is not used: it " + bad);
    ::close(fd);
    return false;
  }
  if (st.st_size < 0 || static_cast<uint64_t>(st.st_size) > limit) {
    ::close(fd);
    return false;
  }
  // A regular file's size is known: read one byte more to see it did not grow.
  std::string data(static_cast<size_t>(st.st_size) + 1, '\0');
  size_t got = 0;
  while (got < data.size()) {
    const ssize_t r = ::read(fd, &data[got], data.size() - got);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    got += static_cast<size_t>(r);
  }
  ::close(fd);
  if (got != static_cast<size_t>(st.st_size)) return false;  // changed since fstat
  data.resize(got);
  *out = std::move(data);
  return true;
}

std::string file_name(const Kind& kind, const std::string& key) {
  char name[48];
  std::snprintf(name, sizeof name, "%016llx%016llx", static_cast<unsigned long long>(hash64(key)),
                static_cast<unsigned long long>(hash64(key, 0x84222325cbf29ce4ULL)));
  return name + std::string(kind.extension);
}

}  // namespace

std::string directory(const char* dir_variable, const char* subdir) {
  const char* d = std::getenv(dir_variable);
  if (d && *d) return d;
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  if (xdg && *xdg) return std::string(xdg) + "/chainerc/" + subdir;
  const char* home = std::getenv("HOME");
  if (home && *home) return std::string(home) + "/.cache/chainerc/" + subdir;
  return "";
}

uint64_t hash64(const std::string& data, uint64_t seed) {
  uint64_t h = seed;
  for (unsigned char c : data) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return h;
}

std::string path_for(const Kind& kind, const std::string& dir, const std::string& key) {
  return dir + "/" + file_name(kind, key);
}

bool load(const Kind& kind, const std::string& dir, const std::string& key, std::string* payload) {
  if (dir.empty()) return false;
  Fd d;
  d.fd = open_trusted_dir(dir, "the cache directory");
  if (d.fd < 0) return false;
  std::string data;
  if (!read_entry(d.fd, file_name(kind, key), path_for(kind, dir, key), kind.max_bytes, &data))
    return false;
  if (data.size() < kHeader || std::memcmp(data.data(), kind.magic, 8) != 0) return false;
  const uint64_t key_len = get_u64(data.data() + 8), pay_len = get_u64(data.data() + 16);
  const uint64_t sum = get_u64(data.data() + 24);
  // Lengths as read are compared with the file's, each bounded first (no
  // overflow in the sum).
  const uint64_t body = data.size() - kHeader;
  if (key_len != key.size() || pay_len > body || key_len > body || key_len + pay_len != body)
    return false;
  if (data.compare(kHeader, key_len, key) != 0) return false;
  std::string p = data.substr(kHeader + key_len);
  if (checksum(key, p) != sum) return false;
  *payload = std::move(p);
  return true;
}

bool store(const Kind& kind, const std::string& dir, const std::string& key,
           const std::string& payload) {
  if (dir.empty()) return false;
  make_dirs(dir);
  Fd d;
  d.fd = open_trusted_dir(dir, "the cache directory");
  if (d.fd < 0) return false;
  static std::atomic<unsigned> counter{0};
  const std::string name = file_name(kind, key);
  const std::string tmp =
      name + ".tmp." + std::to_string(getpid()) + "." + std::to_string(counter.fetch_add(1));
  std::string data(kind.magic, 8);
  put_u64(data, key.size());
  put_u64(data, payload.size());
  put_u64(data, checksum(key, payload));
  data += key;
  data += payload;
  // Owner-only, created here (O_EXCL, no symlink followed) in the directory
  // checked above, and renamed into place within it.
  files::OpenOptions o;
  o.dir_fd = d.fd;
  o.no_follow = true;
  std::string why;
  const int fd = files::open_for_write(tmp, 0600, &why, true, o);
  if (fd < 0) return false;
  bool ok = write_all(fd, data);
  ok = (::close(fd) == 0) && ok;
  if (ok) ok = renameat(d.fd, tmp.c_str(), d.fd, name.c_str()) == 0;
  if (!ok) unlinkat(d.fd, tmp.c_str(), 0);
  return ok;
}

}  // namespace chainerc::disk_cache
