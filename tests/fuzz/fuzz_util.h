// Shared by the fuzz targets (tests/fuzz/*.cpp): each target defines
// `int ch_fuzz_<name>(const uint8_t* data, size_t size)`, which libFuzzer
// calls through LLVMFuzzerTestOneInput (-Dfuzzing=true, CH_FUZZ_LIBFUZZER) and
// the corpus replay test (test_fuzz_corpus.cpp) calls once per file of
// tests/fuzz/corpus/<name>/ in the ordinary test passes.
#pragma once

#include <ch/ch.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

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
