// The caching host allocator (src/core/allocator.cpp) in a process of its
// own, so that its figures start from nothing: the accounting (in use,
// cached, held = both), size classes and best fit with splitting and merging,
// the gathering of free segments and the bound on what the cache holds, no
// leak, thread safety (it is called from the pool's threads) and the failure
// paths. The expected figures follow from the rules in allocator.h: small
// requests (<= 64 KiB) round to four classes per power of two, large ones to
// 4 KiB; a free large block splits when the rest is >= 64 KiB; the cache may
// hold the high-water mark of bytes in use and half as much again (>= 1 MiB).
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "backend/cpu/parallel.h"
#include "core/allocator.h"
#include "core/error.h"

using namespace chainerc;

#if defined(__SANITIZE_ADDRESS__)
#define CH_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CH_ASAN 1
#endif
#endif

namespace {

constexpr size_t kKiB = 1024, kMiB = 1024 * 1024;

int64_t held() {
  ch_memory_stats s = host_memory_stats();
  return s.bytes_in_use + s.bytes_cached;
}

bool aligned(const void* p) { return reinterpret_cast<uintptr_t>(p) % 64 == 0; }

ch_status status_of(size_t nbytes) {
  try {
    void* p = host_allocate(nbytes);
    host_deallocate(p, nbytes);
  } catch (const Error& e) {
    return e.status();
  }
  return CH_OK;
}

// Every test starts with nothing cached and the bound's high-water mark at
// what is in use (nothing, unless a test leaks).
class HostAllocator : public ::testing::Test {
 protected:
  void SetUp() override {
    host_empty_cache();
    s0_ = host_memory_stats();
    ASSERT_EQ(s0_.bytes_in_use, 0);
    ASSERT_EQ(s0_.bytes_cached, 0);
    ASSERT_EQ(chainerc::testing::host_segments(), 0u);
  }
  void TearDown() override {
    host_empty_cache();
    EXPECT_EQ(host_memory_stats().bytes_in_use, 0) << "a test leaked blocks";
    EXPECT_EQ(host_memory_stats().bytes_cached, 0);
    EXPECT_EQ(chainerc::testing::host_segments(), 0u);
  }
  ch_memory_stats s0_{};
};

TEST_F(HostAllocator, SmallClassesAccountingAndReuse) {
  // 1000 bytes -> class 1024 (classes 768, 896, 1024 between 512 and 1024).
  void* p = host_allocate(1000);
  EXPECT_TRUE(aligned(p));
  ch_memory_stats s = host_memory_stats();
  EXPECT_EQ(s.bytes_in_use, 1024);
  EXPECT_EQ(s.bytes_cached, 0);
  EXPECT_EQ(s.allocations, s0_.allocations + 1);
  EXPECT_EQ(s.cache_misses, s0_.cache_misses + 1);
  host_deallocate(p, 1000);
  s = host_memory_stats();
  EXPECT_EQ(s.bytes_in_use, 0);
  EXPECT_EQ(s.bytes_cached, 1024);
  EXPECT_EQ(s.peak_bytes_in_use >= 1024, true);
  // Same class: the same block, no miss; 1025 bytes is the next class (1280).
  void* q = host_allocate(1020);
  EXPECT_EQ(q, p);
  void* r = host_allocate(1025);
  s = host_memory_stats();
  EXPECT_EQ(s.cache_misses, s0_.cache_misses + 2);
  EXPECT_EQ(s.bytes_in_use, 1024 + 1280);
  host_deallocate(q, 1020);
  host_deallocate(r, 1025);
  EXPECT_EQ(held(), 1024 + 1280);
  // Zero bytes still gives a valid, distinct block of the smallest class.
  void* z0 = host_allocate(0);
  void* z1 = host_allocate(0);
  EXPECT_NE(z0, nullptr);
  EXPECT_NE(z0, z1);
  host_deallocate(z0, 0);
  host_deallocate(z1, 0);
  host_deallocate(nullptr, 100);  // no-op
}

TEST_F(HostAllocator, LargeBlocksSplitAndMerge) {
  // One 1 MiB segment, freed, then carved into 512 KiB + 400 KiB (the rest,
  // 112 KiB >= 64 KiB, stays free): no further system allocation.
  void* a = host_allocate(kMiB);
  EXPECT_TRUE(aligned(a));
  host_deallocate(a, kMiB);
  const ch_memory_stats s1 = host_memory_stats();
  EXPECT_EQ(s1.bytes_cached, static_cast<int64_t>(kMiB));
  EXPECT_EQ(chainerc::testing::host_segments(), 1u);
  void* b = host_allocate(512 * kKiB);
  void* c = host_allocate(400 * kKiB);
  EXPECT_EQ(b, a);
  EXPECT_EQ(static_cast<char*>(c), static_cast<char*>(a) + 512 * kKiB);
  ch_memory_stats s = host_memory_stats();
  EXPECT_EQ(s.cache_misses, s1.cache_misses);
  EXPECT_EQ(s.bytes_in_use, static_cast<int64_t>(912 * kKiB));
  EXPECT_EQ(s.bytes_cached, static_cast<int64_t>(112 * kKiB));
  // 100,001 bytes round to 100 KiB (4 KiB steps) and fit the 112 KiB rest
  // whole (12 KiB left would be too small to split off): counted as 112 KiB.
  void* d = host_allocate(100001);
  EXPECT_EQ(static_cast<char*>(d), static_cast<char*>(a) + 912 * kKiB);
  s = host_memory_stats();
  EXPECT_EQ(s.bytes_in_use, static_cast<int64_t>(kMiB));
  EXPECT_EQ(s.bytes_cached, 0);
  // Freed in any order, the pieces merge back into the 1 MiB block.
  host_deallocate(c, 400 * kKiB);
  host_deallocate(d, 100001);
  host_deallocate(b, 512 * kKiB);
  s = host_memory_stats();
  EXPECT_EQ(s.bytes_in_use, 0);
  EXPECT_EQ(s.bytes_cached, static_cast<int64_t>(kMiB));
  void* e = host_allocate(kMiB);
  EXPECT_EQ(e, a);
  EXPECT_EQ(host_memory_stats().cache_misses, s1.cache_misses);
  EXPECT_EQ(chainerc::testing::host_segments(), 1u);
  host_deallocate(e, kMiB);
  // A pointer the allocator never gave out is ignored, not cached.
  alignas(64) static char foreign[128 * kKiB];
  host_deallocate(foreign, sizeof foreign);
  EXPECT_EQ(host_memory_stats().bytes_cached, static_cast<int64_t>(kMiB));
}

TEST_F(HostAllocator, MissGathersFreeSegmentsUnderTheBound) {
  // Two 4 MiB segments in use at once: high-water mark 8 MiB, bound 12 MiB.
  void* a = host_allocate(4 * kMiB);
  void* b = host_allocate(4 * kMiB);
  host_deallocate(a, 4 * kMiB);
  host_deallocate(b, 4 * kMiB);
  EXPECT_EQ(chainerc::testing::host_segments(), 2u);
  EXPECT_EQ(chainerc::testing::host_held_bound(), 12 * kMiB);
  const long long trimmed0 = chainerc::testing::host_blocks_trimmed();
  const ch_memory_stats s1 = host_memory_stats();
  // 6 MiB fits neither: both go back and one segment of 6 MiB + 6 MiB (as
  // much of the 8 MiB given back as the 12 MiB bound leaves) replaces them.
  void* c = host_allocate(6 * kMiB);
  ch_memory_stats s = host_memory_stats();
  EXPECT_EQ(s.cache_misses, s1.cache_misses + 1);
  EXPECT_EQ(chainerc::testing::host_blocks_trimmed(), trimmed0 + 2);
  EXPECT_EQ(chainerc::testing::host_segments(), 1u);
  EXPECT_EQ(s.bytes_in_use, static_cast<int64_t>(6 * kMiB));
  EXPECT_EQ(s.bytes_cached, static_cast<int64_t>(6 * kMiB));
  // The rest serves the next requests without the system.
  void* d = host_allocate(5 * kMiB);
  void* e = host_allocate(kMiB);
  EXPECT_EQ(static_cast<char*>(d), static_cast<char*>(c) + 6 * kMiB);
  EXPECT_EQ(static_cast<char*>(e), static_cast<char*>(c) + 11 * kMiB);
  EXPECT_EQ(host_memory_stats().cache_misses, s1.cache_misses + 1);
  EXPECT_EQ(held(), static_cast<int64_t>(12 * kMiB));
  host_deallocate(c, 6 * kMiB);
  host_deallocate(d, 5 * kMiB);
  host_deallocate(e, kMiB);
  EXPECT_EQ(host_memory_stats().bytes_cached, static_cast<int64_t>(12 * kMiB));
}

TEST_F(HostAllocator, SmallClassesTrimmedAboveTheBound) {
  // 32 blocks of 64 KiB (2 MiB) in use, then cached: bound 2 + 1 MiB.
  std::vector<void*> big(32), other(64);
  for (void*& p : big) p = host_allocate(64 * kKiB);
  for (void* p : big) host_deallocate(p, 64 * kKiB);
  EXPECT_EQ(chainerc::testing::host_held_bound(), 3 * kMiB);
  const long long trimmed0 = chainerc::testing::host_blocks_trimmed();
  // 64 blocks of 32 KiB (another class): without the bound the cache would
  // hold 4 MiB; the 64 KiB blocks go back instead, and it never holds more
  // than the bound.
  for (void*& p : other) {
    p = host_allocate(32 * kKiB);
    EXPECT_LE(held(), static_cast<int64_t>(chainerc::testing::host_held_bound()));
  }
  EXPECT_EQ(held(), static_cast<int64_t>(3 * kMiB));
  EXPECT_EQ(chainerc::testing::host_blocks_trimmed(), trimmed0 + 16);
  for (void* p : other) host_deallocate(p, 32 * kKiB);
  // The 16 cached 64 KiB blocks are still reused.
  const ch_memory_stats s1 = host_memory_stats();
  for (int i = 0; i < 16; ++i) big[i] = host_allocate(64 * kKiB);
  EXPECT_EQ(host_memory_stats().cache_misses, s1.cache_misses);
  for (int i = 0; i < 16; ++i) host_deallocate(big[i], 64 * kKiB);
}

TEST_F(HostAllocator, RepeatedStepsReachTheSystemOnlyWhileWarmingUp) {
  // A training step's pattern (sizes of the MNIST convnet's arrays: weights
  // kept, activations and temporaries of different sizes freed at different
  // moments), repeated: after the first steps, no system allocation, and the
  // cache holds no more than the bound.
  const size_t sizes[] = {4608000, 518400, 414720, 1152000, 1280000, 512000,
                          51200,   320000, 200000, 4000,    4608000, 1152000};
  void* weights = host_allocate(1600000);
  long long misses_after_warmup = 0;
  for (int step = 0; step < 20; ++step) {
    if (step == 3) misses_after_warmup = host_memory_stats().cache_misses;
    void* act0 = host_allocate(sizes[0]);
    void* t0 = host_allocate(sizes[1]);
    void* t1 = host_allocate(sizes[2]);
    host_deallocate(t1, sizes[2]);
    host_deallocate(t0, sizes[1]);
    void* act1 = host_allocate(sizes[3]);
    host_deallocate(act0, sizes[0]);
    void* act2 = host_allocate(sizes[4]);
    void* t2 = host_allocate(sizes[5]);
    void* t3 = host_allocate(sizes[6]);
    host_deallocate(t3, sizes[6]);
    host_deallocate(t2, sizes[5]);
    void* act3 = host_allocate(sizes[7]);
    host_deallocate(act2, sizes[4]);
    void* act4 = host_allocate(sizes[8]);
    void* loss = host_allocate(sizes[9]);
    void* g0 = host_allocate(sizes[10]);  // backward: large gradients
    void* g1 = host_allocate(sizes[11]);
    host_deallocate(g1, sizes[11]);
    host_deallocate(g0, sizes[10]);
    for (auto [p, n] : {std::pair{act1, sizes[3]}, std::pair{act3, sizes[7]},
                        std::pair{act4, sizes[8]}, std::pair{loss, sizes[9]}})
      host_deallocate(p, n);
    EXPECT_LE(held(), static_cast<int64_t>(chainerc::testing::host_held_bound()));
  }
  EXPECT_EQ(host_memory_stats().cache_misses, misses_after_warmup);
  host_deallocate(weights, 1600000);
}

TEST_F(HostAllocator, ThreadsShareItSafely) {
  // Threads allocate, fill, check and free blocks of mixed sizes at once: a
  // block handed to two owners, or a lost update of the figures, shows up as
  // a wrong byte or wrong totals.
  auto work = [](unsigned seed, int rounds) {
    std::mt19937 rng(seed);
    std::vector<std::pair<unsigned char*, size_t>> held_blocks;
    int bad = 0;
    for (int i = 0; i < rounds; ++i) {
      if (held_blocks.size() < 8 && (rng() % 3 != 0 || held_blocks.empty())) {
        const size_t n = rng() % 2 ? 1 + rng() % 4096 : 60 * kKiB + rng() % (600 * kKiB);
        auto* p = static_cast<unsigned char*>(host_allocate(n));
        if (!aligned(p)) ++bad;
        std::memset(p, static_cast<int>(seed & 0xff), n);
        held_blocks.push_back({p, n});
      } else {
        const size_t k = rng() % held_blocks.size();
        auto [p, n] = held_blocks[k];
        for (size_t j = 0; j < n; j += 97)
          if (p[j] != static_cast<unsigned char>(seed & 0xff)) ++bad;
        host_deallocate(p, n);
        held_blocks.erase(held_blocks.begin() + static_cast<std::ptrdiff_t>(k));
      }
    }
    for (auto [p, n] : held_blocks) host_deallocate(p, n);
    return bad;
  };
  std::atomic<int> bad{0};
  std::vector<std::thread> threads;
  for (unsigned t = 0; t < 4; ++t) threads.emplace_back([&, t] { bad += work(t + 1, 3000); });
  for (auto& t : threads) t.join();
  // And from the pool's threads.
  const int pool_threads = cpu::num_threads();
  cpu::set_num_threads(2);
  cpu::parallel_for(8, 1, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) bad += work(static_cast<unsigned>(100 + i), 500);
  });
  cpu::set_num_threads(pool_threads);
  EXPECT_EQ(bad.load(), 0);
  ch_memory_stats s = host_memory_stats();
  EXPECT_EQ(s.bytes_in_use, 0);
  EXPECT_GE(s.bytes_cached, 0);
  EXPECT_EQ(s.allocations - s0_.allocations >= 4 * 1000, true);
}

TEST_F(HostAllocator, FailuresLeaveTheFiguresAsTheyWere) {
  void* keep = host_allocate(256 * kKiB);
  const ch_memory_stats s1 = host_memory_stats();
  // More than any machine has: refused with CH_ERR_OUT_OF_MEMORY (1 PiB by
  // the system; AddressSanitizer aborts on such a request instead).
#ifndef CH_ASAN
  EXPECT_EQ(status_of(size_t{1} << 50), CH_ERR_OUT_OF_MEMORY);
#endif
  EXPECT_EQ(status_of(~size_t{0}), CH_ERR_OUT_OF_MEMORY);
  // Injected failure (what tests/reliability uses): the n-th call fails once.
  chainerc::testing::fail_allocation_after(2);
  EXPECT_EQ(status_of(100), CH_OK);
  EXPECT_EQ(status_of(100), CH_ERR_OUT_OF_MEMORY);
  EXPECT_EQ(status_of(100), CH_OK);
  EXPECT_EQ(chainerc::testing::host_allocations_counted(), 3);
  chainerc::testing::fail_allocation_after(0);
  const ch_memory_stats s = host_memory_stats();
  EXPECT_EQ(s.bytes_in_use, s1.bytes_in_use);
  EXPECT_LE(s.peak_bytes_in_use, s1.peak_bytes_in_use + 128);
  host_deallocate(keep, 256 * kKiB);
}

TEST_F(HostAllocator, SystemRefusalFallsBackToTheRequestAlone) {
  // 48 MiB of whole free segments cached (high-water mark 48 MiB, bound 72).
  void* a = host_allocate(24 * kMiB);
  void* b = host_allocate(24 * kMiB);
  host_deallocate(a, 24 * kMiB);
  host_deallocate(b, 24 * kMiB);
  // The system refuses more than 40 MiB at once. A 40 MiB request gives the
  // 48 MiB back and first asks for 40 + 32 MiB (its share of the bound):
  // refused; then for the 40 MiB alone.
  chainerc::testing::refuse_system_allocations_above(40 * kMiB);
  void* c = host_allocate(40 * kMiB);
  std::memset(c, 1, 40 * kMiB);
  ch_memory_stats s = host_memory_stats();
  EXPECT_EQ(s.bytes_in_use, static_cast<int64_t>(40 * kMiB));
  EXPECT_EQ(s.bytes_cached, 0);
  EXPECT_EQ(chainerc::testing::host_segments(), 1u);
  // Small blocks cached, then a request the system refuses even after every
  // cached block went back: CH_ERR_OUT_OF_MEMORY, nothing cached, the
  // figures as before.
  void* small = host_allocate(1000);
  host_deallocate(small, 1000);
  EXPECT_EQ(host_memory_stats().bytes_cached, 1024);
  try {
    host_allocate(64 * kMiB);
    ADD_FAILURE() << "64 MiB should have been refused";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), CH_ERR_OUT_OF_MEMORY);
    EXPECT_NE(std::string(e.what()).find("67108864 bytes"), std::string::npos) << e.what();
  }
  s = host_memory_stats();
  EXPECT_EQ(s.bytes_in_use, static_cast<int64_t>(40 * kMiB));
  EXPECT_EQ(s.bytes_cached, 0);
  chainerc::testing::refuse_system_allocations_above(0);
  host_deallocate(c, 40 * kMiB);
}

}  // namespace

// A data set's worth (64 MiB and more) lands on 2 MiB boundaries, advised
// into transparent huge pages: where the kernel's THP mode lets a program
// ask ("madvise" or "always"), /proc/self/smaps says the mapping is
// eligible. The memory is usable and given back like any other.
TEST_F(HostAllocator, DataSetSizedArraysAskForHugePages) {
  const size_t n = 64 * kMiB + 3000;
  char* p = static_cast<char*>(host_allocate(n));
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % (2 * kMiB), 0u);
  std::memset(p, 7, n);
  EXPECT_EQ(p[n - 1], 7);
  std::string mode;
  if (std::FILE* f = std::fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r")) {
    char buf[128] = {};
    if (std::fgets(buf, sizeof buf, f)) mode = buf;
    std::fclose(f);
  }
#if !defined(CH_ASAN)  // ASan's allocator places and advises memory its own way
  if (mode.find("[madvise]") != std::string::npos || mode.find("[always]") != std::string::npos) {
    std::FILE* smaps = std::fopen("/proc/self/smaps", "r");
    ASSERT_NE(smaps, nullptr);
    char line[512];
    bool inside = false, eligible = false;
    const uintptr_t at = reinterpret_cast<uintptr_t>(p);
    while (std::fgets(line, sizeof line, smaps)) {
      unsigned long lo = 0, hi = 0;
      if (std::sscanf(line, "%lx-%lx ", &lo, &hi) == 2 &&
          std::strchr(line, '-') < std::strchr(line, ' '))
        inside = lo <= at && at < hi;
      else if (inside && std::strncmp(line, "THPeligible:", 12) == 0)
        eligible = std::strtol(line + 12, nullptr, 10) == 1;
    }
    std::fclose(smaps);
    EXPECT_TRUE(eligible) << "THP mode " << mode;
  }
#endif
  host_deallocate(p, n);
  EXPECT_EQ(host_memory_stats().bytes_in_use, 0);
}
