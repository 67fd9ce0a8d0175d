// Under a resource limit (issue 48): the CPU thread pool cannot start its
// worker threads when the address space is capped (RLIMIT_AS leaves no room
// for a thread's stack). The parallel loop must fail with
// CH_ERR_OUT_OF_MEMORY, leave the calling thread outside any parallel region
// (else every later loop would run inline), and work again once the limit
// is lifted. Each case runs in a fresh process (the threadsafe death-test
// style re-runs it alone), where the pool has no workers yet.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "backend/cpu/parallel.h"
#include "core/error.h"
#include "sanitized.h"

namespace {

using reliability_test::kSanitized;

// This process's virtual size in bytes (VmSize in /proc/self/status).
size_t virtual_size() {
  std::ifstream in("/proc/self/status");
  std::string key;
  while (in >> key) {
    if (key == "VmSize:") {
      size_t kb = 0;
      in >> kb;
      return kb * 1024;
    }
    in.ignore(1 << 20, '\n');
  }
  return 0;
}

int64_t parallel_sum(int64_t n) {
  std::atomic<int64_t> sum{0};
  chainerc::cpu::detail::parallel_run(n, 4, [&](int64_t b, int64_t e) {
    int64_t s = 0;
    for (int64_t i = b; i < e; ++i) s += i;
    sum.fetch_add(s);
  });
  return sum.load();
}

TEST(ResourceLimits, ThreadCreationFailureIsOutOfMemory) {
  if (kSanitized) GTEST_SKIP() << "sanitizers reserve the address space RLIMIT_AS caps";
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  auto child = [] {
    chainerc::cpu::set_num_threads(4);
    const size_t vm = virtual_size();
    ASSERT_GT(vm, 0u);
    rlimit old{};
    ASSERT_EQ(getrlimit(RLIMIT_AS, &old), 0);
    // Room for small allocations, none for a thread's stack (8 MiB here,
    // and glibc maps it whole).
    rlimit capped = old;
    capped.rlim_cur = vm + (1 << 20);
    ASSERT_EQ(setrlimit(RLIMIT_AS, &capped), 0);
    ch_status status = CH_OK;
    try {
      parallel_sum(1000);
    } catch (const chainerc::Error& e) {
      status = e.status();
      std::fprintf(stderr, "refused as expected: %s\n", e.what());
    }
    ASSERT_EQ(setrlimit(RLIMIT_AS, &old), 0);
    EXPECT_EQ(status, CH_ERR_OUT_OF_MEMORY);
    EXPECT_FALSE(chainerc::cpu::in_parallel_region_now());
    // With the limit gone the pool starts its workers and the loop runs.
    EXPECT_EQ(parallel_sum(1000), 999 * 1000 / 2);
    std::fflush(nullptr);
    std::_Exit(::testing::Test::HasFailure() ? 1 : 0);
  };
  EXPECT_EXIT(child(), ::testing::ExitedWithCode(0), "");
}

}  // namespace
