// Replays every file of tests/fuzz/corpus/<target>/ (the seed corpora and the
// inputs that once crashed a target, kept as regression tests) through the
// fuzz targets, in the ordinary test passes (and so under AddressSanitizer,
// UndefinedBehaviorSanitizer and LeakSanitizer in the sanitizer pass).
#include <dirent.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "fuzz_util.h"

#ifndef CH_FUZZ_CORPUS_DIR
#error "CH_FUZZ_CORPUS_DIR must be defined by the build"
#endif

namespace {

std::vector<std::string> files_in(const std::string& dir) {
  std::vector<std::string> out;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d))
      if (e->d_name[0] != '.') out.push_back(dir + "/" + e->d_name);
    closedir(d);
  }
  std::sort(out.begin(), out.end());
  return out;
}

void replay(const char* target, int (*fn)(const uint8_t*, size_t)) {
  std::vector<std::string> files = files_in(std::string(CH_FUZZ_CORPUS_DIR) + "/" + target);
  ASSERT_FALSE(files.empty()) << "no corpus for " << target;
  for (const std::string& f : files) {
    SCOPED_TRACE(f);
    std::ifstream in(f, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_EQ(fn(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()), 0);
  }
}

TEST(FuzzCorpus, Idx) { replay("idx", ch_fuzz_idx); }
TEST(FuzzCorpus, Npz) { replay("npz", ch_fuzz_npz); }
TEST(FuzzCorpus, UserKernel) { replay("user_kernel", ch_fuzz_user_kernel); }
TEST(FuzzCorpus, Sequence) { replay("sequence", ch_fuzz_sequence); }
TEST(FuzzCorpus, Reentry) { replay("reentry", ch_fuzz_reentry); }

// Beyond the corpus, in every pass: inputs of a fixed pseudo-random sequence
// (the same each run) through the re-entrant target, so that the sanitizer
// pass sees call sequences nobody wrote down. CH_FUZZ_REENTRY_INPUTS sets
// how many (default 400).
TEST(FuzzCorpus, ReentryPseudoRandomInputs) {
  const char* env = std::getenv("CH_FUZZ_REENTRY_INPUTS");
  const int n = env ? std::atoi(env) : 400;
  std::mt19937 rng(48);
  for (int i = 0; i < n; ++i) {
    std::vector<uint8_t> bytes(16 + rng() % 240);
    for (uint8_t& b : bytes) b = static_cast<uint8_t>(rng());
    SCOPED_TRACE("input " + std::to_string(i));
    ASSERT_EQ(ch_fuzz_reentry(bytes.data(), bytes.size()), 0);
  }
}

}  // namespace
