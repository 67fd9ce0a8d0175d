#include "disk_cache.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

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

bool make_dirs(const std::string& dir) {
  size_t pos = 0;
  while (pos != std::string::npos) {
    pos = dir.find('/', pos + 1);
    const std::string partial = dir.substr(0, pos);
    if (partial.empty()) continue;
    if (mkdir(partial.c_str(), 0755) != 0 && errno != EEXIST) return false;
  }
  struct stat st;
  return stat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

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

// Reads a regular file of at most `limit` bytes; false when it is not one,
// cannot be read, is larger, or changes size while read.
bool read_small_file(const std::string& path, size_t limit, std::string* out) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size < 0 ||
      static_cast<uint64_t>(st.st_size) > limit) {
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
  char name[48];
  std::snprintf(name, sizeof name, "%016llx%016llx", static_cast<unsigned long long>(hash64(key)),
                static_cast<unsigned long long>(hash64(key, 0x84222325cbf29ce4ULL)));
  return dir + "/" + name + kind.extension;
}

bool load(const Kind& kind, const std::string& dir, const std::string& key, std::string* payload) {
  if (dir.empty()) return false;
  std::string data;
  if (!read_small_file(path_for(kind, dir, key), kind.max_bytes, &data)) return false;
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
  if (dir.empty() || !make_dirs(dir)) return false;
  static std::atomic<unsigned> counter{0};
  const std::string final_path = path_for(kind, dir, key);
  const std::string tmp =
      final_path + ".tmp." + std::to_string(getpid()) + "." + std::to_string(counter.fetch_add(1));
  std::string data(kind.magic, 8);
  put_u64(data, key.size());
  put_u64(data, payload.size());
  put_u64(data, checksum(key, payload));
  data += key;
  data += payload;
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return false;
  bool ok = write_all(fd, data);
  ok = (::close(fd) == 0) && ok;
  if (ok) ok = std::rename(tmp.c_str(), final_path.c_str()) == 0;
  if (!ok) ::unlink(tmp.c_str());
  return ok;
}

}  // namespace chainerc::disk_cache
