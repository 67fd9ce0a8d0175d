// Shared by the fuzz targets (tests/fuzz/*.cpp): each target defines
// `int ch_fuzz_<name>(const uint8_t* data, size_t size)`, which libFuzzer
// calls through LLVMFuzzerTestOneInput (-Dfuzzing=true, CH_FUZZ_LIBFUZZER) and
// the corpus replay test (test_fuzz_corpus.cpp) calls once per file of
// tests/fuzz/corpus/<name>/ in the ordinary test passes.
#pragma once

#include <ch/ch.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

int ch_fuzz_idx(const uint8_t* data, size_t size);
int ch_fuzz_npz(const uint8_t* data, size_t size);
int ch_fuzz_user_kernel(const uint8_t* data, size_t size);
int ch_fuzz_sequence(const uint8_t* data, size_t size);
int ch_fuzz_reentry(const uint8_t* data, size_t size);

namespace chfuzz {

// A file in memory (memfd) that the readers open by path
// (/proc/self/fd/N): rewritten for every input, never on disk.
class MemFile {
 public:
  explicit MemFile(const char* name) {
    fd_ = memfd_create(name, 0);
    if (fd_ < 0) {
      std::perror("memfd_create");
      std::abort();
    }
    path_ = "/proc/self/fd/" + std::to_string(fd_);
  }
  ~MemFile() { close(fd_); }
  MemFile(const MemFile&) = delete;
  MemFile& operator=(const MemFile&) = delete;
  // Replaces the contents with `data`; returns the path.
  const std::string& write(const uint8_t* data, size_t size) {
    if (ftruncate(fd_, 0) != 0 || pwrite(fd_, data, size, 0) != static_cast<ssize_t>(size)) {
      std::perror("memfd write");
      std::abort();
    }
    return path_;
  }

 private:
  int fd_ = -1;
  std::string path_;
};

// Special files where a reader or a writer is given a path: a FIFO with no
// writer (or reader), a directory, /dev/zero, a symlink to /dev/zero and one
// to the FIFO. An input whose first byte is kSpecialByte (neither IDX's 0
// nor a zip's 'P') names one of them by its second byte instead of holding
// the file's bytes; each must be refused at once (CH_ERR_IO), never block
// (libFuzzer's -timeout, the corpus test's meson timeout).
class SpecialFiles {
 public:
  static constexpr uint8_t kSpecialByte = 0xFF;
  SpecialFiles() {
    const char* t = std::getenv("TMPDIR");
    std::string pattern = std::string(t && *t ? t : "/tmp") + "/chainerc-fuzz-special-XXXXXX";
    if (!mkdtemp(pattern.data())) {
      std::perror("mkdtemp");
      std::abort();
    }
    dir_ = pattern;
    paths_ = {dir_ + "/fifo", dir_ + "/dir", "/dev/zero", dir_ + "/zero-link", dir_ + "/fifo-link"};
    if (mkfifo(paths_[0].c_str(), 0600) != 0 || mkdir(paths_[1].c_str(), 0700) != 0 ||
        symlink("/dev/zero", paths_[3].c_str()) != 0 ||
        symlink(paths_[0].c_str(), paths_[4].c_str()) != 0) {
      std::perror("fuzz special files");
      std::abort();
    }
  }
  ~SpecialFiles() {
    unlink(paths_[4].c_str());
    unlink(paths_[3].c_str());
    rmdir(paths_[1].c_str());
    unlink(paths_[0].c_str());
    rmdir(dir_.c_str());
  }
  SpecialFiles(const SpecialFiles&) = delete;
  SpecialFiles& operator=(const SpecialFiles&) = delete;
  // The special file the input names, or nullptr for an ordinary input.
  const std::string* pick(const uint8_t* data, size_t size) const {
    if (size < 1 || data[0] != kSpecialByte) return nullptr;
    return &paths_[size < 2 ? 0 : data[1] % paths_.size()];
  }

 private:
  std::string dir_;
  std::vector<std::string> paths_;
};

// A call on a special file: refused as CH_ERR_IO (with a message).
inline void check_refused(ch_status st, const char* call) {
  if (st != CH_ERR_IO) {
    std::fprintf(stderr, "%s on a special file returned %d, not CH_ERR_IO\n", call, st);
    std::abort();
  }
}

// The contract under test: a failing call says what was wrong.
inline void check(ch_status st, const char* call) {
  if (st != CH_OK && (ch_error_message() == nullptr || ch_error_message()[0] == '\0')) {
    std::fprintf(stderr, "%s failed with status %d and no message\n", call, st);
    std::abort();
  }
  if (st != CH_OK && ch_error_status() != st) {
    std::fprintf(stderr, "%s returned %d but ch_error_status() is %d\n", call, st,
                 ch_error_status());
    std::abort();
  }
}

}  // namespace chfuzz

#define CH_FUZZ_CHECK(call) chfuzz::check((call), #call)

#ifdef CH_FUZZ_LIBFUZZER
#define CH_FUZZ_ENTRY(fn) \
  extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) { return fn(data, size); }
#else
#define CH_FUZZ_ENTRY(fn)
#endif
