#include "allocator.h"

#include <atomic>
#include <cstdlib>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "error.h"

namespace chainerc {
namespace {

constexpr size_t kAlignment = 64;
constexpr size_t kMinBlock = 64;
// Blocks above this size go straight to the system: caching them would hold
// large amounts of memory for little gain.
constexpr size_t kMaxCached = size_t{1} << 30;

// Round up to one of four size classes per power of two (<= 25% slack).
size_t size_class(size_t n) {
  if (n <= kMinBlock) return kMinBlock;
  size_t p = size_t{1} << (63 - __builtin_clzll(n - 1));  // largest power of two < n
  size_t step = p / 4;
  return (n + step - 1) / step * step;
}

struct HostCache {
  std::mutex mutex;
  std::unordered_map<size_t, std::vector<void*>> free_blocks;
  ch_memory_stats stats{};
};

HostCache& cache() {
  static HostCache* c = new HostCache();  // never destroyed: arrays may outlive static teardown
  return *c;
}

void* system_allocate(size_t n) {
  void* p = std::aligned_alloc(kAlignment, (n + kAlignment - 1) / kAlignment * kAlignment);
  if (!p) fail(CH_ERR_OUT_OF_MEMORY, "out of host memory allocating ", n, " bytes");
  return p;
}

std::atomic<long long> g_fail_at{0};  // testing::fail_allocation_after; 0 = off
std::atomic<long long> g_counted{0};

}  // namespace

void testing::fail_allocation_after(long long n) {
  g_counted.store(0);
  g_fail_at.store(n > 0 ? n : 0);
}

long long testing::host_allocations_counted() { return g_counted.load(); }

void* host_allocate(size_t nbytes) {
  if (g_fail_at.load(std::memory_order_relaxed) > 0 &&
      g_counted.fetch_add(1) + 1 == g_fail_at.load())
    fail(CH_ERR_OUT_OF_MEMORY, "out of host memory allocating ", nbytes,
         " bytes (injected failure, chainerc::testing::fail_allocation_after)");
  size_t n = size_class(nbytes);
  HostCache& c = cache();
  {
    std::lock_guard<std::mutex> lock(c.mutex);
    c.stats.allocations++;
    auto it = c.free_blocks.find(n);
    if (it != c.free_blocks.end() && !it->second.empty()) {
      void* p = it->second.back();
      it->second.pop_back();
      c.stats.bytes_cached -= static_cast<int64_t>(n);
      c.stats.bytes_in_use += static_cast<int64_t>(n);
      if (c.stats.bytes_in_use > c.stats.peak_bytes_in_use)
        c.stats.peak_bytes_in_use = c.stats.bytes_in_use;
      return p;
    }
    c.stats.cache_misses++;
  }
  void* p = system_allocate(n);
  std::lock_guard<std::mutex> lock(c.mutex);
  c.stats.bytes_in_use += static_cast<int64_t>(n);
  if (c.stats.bytes_in_use > c.stats.peak_bytes_in_use)
    c.stats.peak_bytes_in_use = c.stats.bytes_in_use;
  return p;
}

void host_deallocate(void* ptr, size_t nbytes) noexcept {
  if (!ptr) return;
  size_t n = size_class(nbytes);
  HostCache& c = cache();
  {
    std::lock_guard<std::mutex> lock(c.mutex);
    c.stats.bytes_in_use -= static_cast<int64_t>(n);
    if (n <= kMaxCached) {
      try {
        c.free_blocks[n].push_back(ptr);
        c.stats.bytes_cached += static_cast<int64_t>(n);
        return;
      } catch (...) {
        // no memory to remember the block: give it back instead
      }
    }
  }
  std::free(ptr);
}

ch_memory_stats host_memory_stats() {
  std::lock_guard<std::mutex> lock(cache().mutex);
  return cache().stats;
}

void host_empty_cache() {
  HostCache& c = cache();
  std::unordered_map<size_t, std::vector<void*>> blocks;
  {
    std::lock_guard<std::mutex> lock(c.mutex);
    blocks.swap(c.free_blocks);
    c.stats.bytes_cached = 0;
  }
  for (auto& kv : blocks)
    for (void* p : kv.second) std::free(p);
}

}  // namespace chainerc
