// Special files where the library reads or writes a file the host names, and
// sizes a file or an argument declares (issue 48, items 4 and 5). Every case
// that once blocked or exhausted memory runs in a child process of its own,
// bounded by alarm(2) (a hang ends as SIGALRM, never as a stuck test) and,
// for memory, by RLIMIT_AS a little above what the child already maps (a
// table or an inflation beyond that fails as CH_ERR_OUT_OF_MEMORY instead of
// the status the fix gives). The status travels back as the exit code.
#include <ch/ch.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <string>

#include "sanitized.h"

namespace {

using reliability_test::kSanitized;

constexpr unsigned kBoundSeconds = 20;

// Runs `body` in a child bounded by kBoundSeconds (and, when `extra_bytes`
// > 0, by RLIMIT_AS = the child's current address space + extra_bytes);
// returns the ch_status it returned, or 1000 + the signal that killed it. The
// child's message goes to stderr for the log.
int in_child(const std::function<ch_status()>& body, size_t extra_bytes = 0) {
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    alarm(kBoundSeconds);
    if (extra_bytes) {
      size_t vm_kb = 0;
      std::ifstream status("/proc/self/status");
      for (std::string line; std::getline(status, line);)
        if (line.rfind("VmSize:", 0) == 0) vm_kb = std::strtoull(line.c_str() + 7, nullptr, 10);
      const rlim_t limit = static_cast<rlim_t>(vm_kb) * 1024 + extra_bytes;
      const struct rlimit rl = {limit, limit};
      if (vm_kb == 0 || setrlimit(RLIMIT_AS, &rl) != 0) _exit(99);
    }
    const ch_status st = body();
    if (st != CH_OK)
      std::fprintf(stderr, "child: %s: %s\n", ch_status_name(st), ch_error_message());
    std::fflush(nullptr);
    _exit(-static_cast<int>(st));  // statuses are 0 and small negatives
  }
  int ws = 0;
  if (pid < 0 || waitpid(pid, &ws, 0) != pid) return -1000;
  if (WIFSIGNALED(ws)) return 1000 + WTERMSIG(ws);
  return -WEXITSTATUS(ws);
}

class TempDir {
 public:
  TempDir() {
    const char* t = std::getenv("TMPDIR");
    std::string pattern = std::string(t && *t ? t : "/tmp") + "/chainerc-hostile-XXXXXX";
    if (!mkdtemp(pattern.data())) ADD_FAILURE() << "mkdtemp failed";
    path_ = pattern;
  }
  ~TempDir() {
    const std::string cmd = "rm -rf '" + path_ + "'";
    if (std::system(cmd.c_str()) != 0) ADD_FAILURE() << cmd;
  }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// A tiny valid IDX file: 3 unsigned bytes.
void write_idx(const std::string& path) {
  const unsigned char bytes[] = {0, 0, 8, 1, 0, 0, 0, 3, 7, 8, 9};
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(bytes), sizeof bytes);
}

// The special files a host might name, made in `dir`: a FIFO without a
// writer, a directory, /dev/zero, and a symlink to /dev/zero.
std::vector<std::pair<std::string, std::string>> specials(const TempDir& dir) {
  std::vector<std::pair<std::string, std::string>> out;
  const std::string fifo = dir.file("fifo"), sub = dir.file("dir"), link = dir.file("zero-link");
  EXPECT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_EQ(mkdir(sub.c_str(), 0700), 0);
  EXPECT_EQ(symlink("/dev/zero", link.c_str()), 0);
  out = {{"a FIFO with no writer", fifo},
         {"a directory", sub},
         {"/dev/zero", "/dev/zero"},
         {"a symlink to /dev/zero", link}};
  return out;
}

bool is_fifo(const std::string& path) {
  struct stat st {};
  return lstat(path.c_str(), &st) == 0 && S_ISFIFO(st.st_mode);
}

ch_function_set* linear_set(int64_t in, int64_t out) {
  ch_function_set* set = nullptr;
  ch_function* l = nullptr;
  if (ch_function_set_new(&set) != CH_OK ||
      ch_functions_linear_new(&l, in, out, CH_FLOAT32, 1.0, 0.0, 0, nullptr, nullptr) != CH_OK ||
      ch_function_set_add_function(set, "l", l) != CH_OK)
    ADD_FAILURE() << ch_error_message();
  ch_function_release(l);
  return set;
}

// --- item 4: special files never block, and are refused by name ----------

TEST(SpecialFiles, ReadIdxRefusesEveryNonRegularFile) {
  TempDir dir;
  for (const auto& [what, path] : specials(dir)) {
    const std::string p = path;
    const int st = in_child([&] {
      ch_array* a = nullptr;
      return ch_datasets_read_idx(&a, p.c_str(), CH_FLOAT32, 1.0);
    });
    EXPECT_EQ(st, CH_ERR_IO) << what << " (1000 + n: signal n ended the child)";
    ch_array* a = nullptr;
    if (what != "a FIFO with no writer") {  // in this process too: the message names the file
      EXPECT_EQ(ch_datasets_read_idx(&a, p.c_str(), CH_FLOAT32, 1.0), CH_ERR_IO) << what;
      EXPECT_NE(std::strstr(ch_error_message(), "not a regular file"), nullptr)
          << what << ": " << ch_error_message();
    }
  }
  // The control: a regular file, and a symlink to one, read.
  const std::string idx = dir.file("ok.idx"), link = dir.file("ok-link.idx");
  write_idx(idx);
  ASSERT_EQ(symlink(idx.c_str(), link.c_str()), 0);
  for (const std::string& p : {idx, link}) {
    ch_array* a = nullptr;
    ASSERT_EQ(ch_datasets_read_idx(&a, p.c_str(), CH_FLOAT32, 1.0), CH_OK) << ch_error_message();
    EXPECT_EQ(ch_array_size(a), 3);
    ch_array_release(a);
  }
}

TEST(SpecialFiles, LoadNpzRefusesEveryNonRegularFile) {
  TempDir dir;
  for (const auto& [what, path] : specials(dir)) {
    const std::string p = path;
    EXPECT_EQ(in_child([&] {
                ch_function_set* set = linear_set(3, 2);
                return ch_function_set_load_npz(set, p.c_str());
              }),
              CH_ERR_IO)
        << what;
    EXPECT_EQ(in_child([&] {
                ch_array* a = nullptr;
                return ch_serializers_load_npz_array(&a, p.c_str(), "x");
              }),
              CH_ERR_IO)
        << what;
  }
}

TEST(SpecialFiles, SaveNpzRefusesAFifoWithOrWithoutAReader) {
  TempDir dir;
  const std::string fifo = dir.file("fifo");
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  for (const bool reader : {false, true}) {
    // A reader that never reads: a write that got through would block or
    // land in the pipe.
    const int rfd = reader ? open(fifo.c_str(), O_RDONLY | O_NONBLOCK) : -1;
    if (reader) {
      ASSERT_GE(rfd, 0);
    }
    for (const bool empty : {true, false}) {  // no parameters: the archive written by hand
      const int st = in_child([&] {
        ch_function_set* set = nullptr;
        if (empty) {
          if (ch_function_set_new(&set) != CH_OK) return ch_error_status();
        } else {
          set = linear_set(3, 2);
        }
        return ch_function_set_save_npz(set, fifo.c_str(), 0);
      });
      EXPECT_EQ(st, CH_ERR_IO) << (reader ? "reader, " : "no reader, ")
                               << (empty ? "no parameters" : "parameters");
      EXPECT_TRUE(is_fifo(fifo)) << "the FIFO was replaced";
    }
    if (rfd >= 0) {
      char c;
      EXPECT_LE(read(rfd, &c, 1), 0) << "something was written into the FIFO";
      close(rfd);
    }
  }
  // A directory and a device are refused too. The device only for the
  // archive without entries, written in place: a regression of the other
  // path (a temporary file renamed over the name) would replace /dev/null.
  ch_function_set* set = linear_set(3, 2);
  ch_function_set* none = nullptr;
  ASSERT_EQ(ch_function_set_new(&none), CH_OK);
  for (ch_function_set* s : {set, none}) {
    EXPECT_EQ(ch_function_set_save_npz(s, dir.file("").c_str(), 0), CH_ERR_IO);
    EXPECT_NE(std::strstr(ch_error_message(), "a directory"), nullptr) << ch_error_message();
  }
  EXPECT_EQ(ch_function_set_save_npz(none, "/dev/null", 0), CH_ERR_IO);
  EXPECT_NE(std::strstr(ch_error_message(), "not a regular file"), nullptr) << ch_error_message();
  // The control: a regular file (new, then replaced) round-trips.
  const std::string npz = dir.file("ok.npz");
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(ch_function_set_save_npz(set, npz.c_str(), 0), CH_OK) << ch_error_message();
    EXPECT_EQ(ch_function_set_load_npz(set, npz.c_str()), CH_OK) << ch_error_message();
    EXPECT_EQ(ch_function_set_save_npz(none, npz.c_str(), 0), CH_OK) << ch_error_message();
    EXPECT_EQ(ch_function_set_load_npz(none, npz.c_str()), CH_OK) << ch_error_message();
  }
  ch_function_set_release(set);
  ch_function_set_release(none);
}

// --- item 5: sizes declared by an argument or a file ---------------------

// Chainer's word ids may be sparse, but a table entry per id up to INT32_MAX
// (word id 2^31 - 1 is the code INT32_MIN) is not something two words justify.
TEST(DeclaredSizes, HierarchicalSoftmaxIdsAreBoundedByTheTree) {
  if (kSanitized) GTEST_SKIP() << "RLIMIT_AS would break the sanitizer's shadow memory";
  const int32_t hostile[2] = {INT32_MIN, -1};
  const int st = in_child(
      [&] {
        ch_function* f = nullptr;
        return ch_functions_binary_hierarchical_softmax_new(&f, 4, hostile, 1, CH_FLOAT32, nullptr);
      },
      size_t{256} << 20);
  EXPECT_EQ(st, CH_ERR_INVALID_ARGUMENT);
  ch_function* f = nullptr;
  EXPECT_EQ(ch_functions_binary_hierarchical_softmax_new(&f, 4, hostile, 1, CH_FLOAT32, nullptr),
            CH_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::strstr(ch_error_message(), "word id 2147483647"), nullptr) << ch_error_message();
  // The bound: ids below max(2^20, 64 * words) are kept, the next is refused.
  const int32_t largest = (1 << 20) - 1;
  const int32_t at_bound[2] = {-1, -(largest + 1)}, past[2] = {-1, -(largest + 2)};
  ASSERT_EQ(ch_functions_binary_hierarchical_softmax_new(&f, 4, at_bound, 1, CH_FLOAT32, nullptr),
            CH_OK)
      << ch_error_message();
  ch_function_release(f);
  EXPECT_EQ(ch_functions_binary_hierarchical_softmax_new(&f, 4, past, 1, CH_FLOAT32, nullptr),
            CH_ERR_INVALID_ARGUMENT);
}

// A deflated entry of 64 MiB (4096 x 4096 float32 zeros) in a file of about
// 64 KiB, loaded into a (2, 3) parameter: the shape is compared from the
// entry's header, before its data is inflated.
TEST(DeclaredSizes, LoadNpzComparesTheShapeBeforeInflating) {
  if (kSanitized) GTEST_SKIP() << "RLIMIT_AS would break the sanitizer's shadow memory";
  TempDir dir;
  const std::string npz = dir.file("big.npz");
  {
    const int64_t shape[2] = {4096, 4096};
    ch_array* big = nullptr;
    ASSERT_EQ(ch_array_new_full(&big, CH_FLOAT32, shape, 2, 0.0, ch_device_cpu()), CH_OK);
    const char* keys[2] = {"l/W", "l/b"};
    ch_array* arrays[2] = {big, big};
    ASSERT_EQ(ch_serializers_save_npz_arrays(npz.c_str(), keys, arrays, 2, CH_NPZ_COMPRESSED),
              CH_OK)
        << ch_error_message();
    ch_array_release(big);
  }
  struct stat st {};
  ASSERT_EQ(stat(npz.c_str(), &st), 0);
  EXPECT_LT(st.st_size, 1 << 20);
  ch_function_set* set = linear_set(3, 2);
  // 32 MiB above what the child maps: half the declared entry.
  const int status =
      in_child([&] { return ch_function_set_load_npz(set, npz.c_str()); }, size_t{32} << 20);
  EXPECT_EQ(status, CH_ERR_SHAPE);
  EXPECT_EQ(ch_function_set_load_npz(set, npz.c_str()), CH_ERR_SHAPE);
  EXPECT_NE(std::strstr(ch_error_message(), "(4096, 4096)"), nullptr) << ch_error_message();
  ch_function_set_release(set);
}

}  // namespace
