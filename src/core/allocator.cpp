#include "allocator.h"

#include <sys/mman.h>  // madvise

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <mutex>
#include <new>
#include <set>
#include <unordered_map>
#include <utility>
#include <vector>

#include "error.h"

namespace chainerc {
namespace {

constexpr size_t kAlignment = 64;
constexpr size_t kMinBlock = 64;
// Requests above this size are large: best fit in segments, split and merged.
constexpr size_t kLargeMin = size_t{64} << 10;
// Large requests are rounded to this (at most 6% slack at kLargeMin).
constexpr size_t kLargeRound = size_t{4} << 10;
// A free large block is split only when the rest is at least this large.
constexpr size_t kMinSplit = kLargeMin;
// Blocks above this size go straight to the system: caching them would hold
// large amounts of memory for little gain.
constexpr size_t kMaxCached = size_t{1} << 30;
// Blocks given back to the system per pass of a trim (freed outside the lock).
constexpr int kTrimBatch = 16;

size_t round_up(size_t n, size_t to) { return (n + to - 1) / to * to; }

// Small requests: one of four size classes per power of two (<= 25% slack).
// Large ones: a multiple of kLargeRound.
size_t block_size(size_t n) {
  if (n <= kMinBlock) return kMinBlock;
  if (n > kLargeMin) return round_up(n, kLargeRound);
  size_t p = size_t{1} << (63 - __builtin_clzll(n - 1));  // largest power of two < n
  size_t step = p / 4;
  return round_up(n, step);
}

// What the cache may hold (in use + cached) given the high-water mark of the
// bytes in use: that mark and half as much again (at least 1 MiB more). Best
// fit leaves some memory in pieces too small for the next request (the MNIST
// convnet's step: about 30% above its arrays' peak); a tighter bound makes
// every step give back and take again (measured: 7 system allocations per
// step at an eighth), which grows the resident size through malloc's free
// lists. The bound is for shapes that keep changing, where misses go on.
size_t held_bound(size_t high_water) {
  return high_water + std::max(high_water / 2, size_t{1} << 20);
}

// A piece of a segment (one aligned_alloc): the blocks of a segment tile it,
// linked in address order.
struct Block {
  char* ptr;
  size_t size;
  bool allocated;
  Block* prev;
  Block* next;
};

struct HostCache {
  std::mutex mutex;
  std::unordered_map<size_t, std::vector<void*>> free_blocks;  // small, by class
  std::set<std::pair<size_t, Block*>> free_large;              // by (size, record)
  std::unordered_map<void*, Block*> live_large;                // allocated, by address
  std::vector<Block*> spare;                                   // unused records
  ch_memory_stats stats{};
  // The most bytes in use at once since the start or the last host_empty_cache.
  size_t high_water = 0;
  long long trimmed = 0;  // blocks and segments given back to the system by trims
  size_t segments = 0;    // large segments held

  Block* record(char* ptr, size_t size, bool allocated, Block* prev, Block* next) {
    Block* b;
    if (spare.empty()) {
      b = new Block;
    } else {
      b = spare.back();
      spare.pop_back();
    }
    *b = Block{ptr, size, allocated, prev, next};
    return b;
  }
  void drop(Block* b) {
    try {
      spare.push_back(b);
    } catch (...) {
      delete b;
    }
  }
};

HostCache& cache() {
  static HostCache* c = new HostCache();  // never destroyed: arrays may outlive static teardown
  return *c;
}

std::atomic<size_t> g_system_refuses_above{0};  // testing::refuse_system_allocations_above

// Allocations of at least this size (data sets, not a model's arrays) are
// placed on 2 MiB boundaries and advised into transparent huge pages where
// the kernel leaves that to the program (THP "madvise", Debian's default):
// gathering random rows of a data set then misses the TLB far less
// (measured: bench/results/constants.md, kHugePageMin). The threshold
// keeps models' arrays and the cache's segments (at most a few tens of MiB
// for bench/train's nets) on small pages, so their resident memory is not
// rounded up.
constexpr size_t kHugePageMin = size_t{64} << 20;
constexpr size_t kHugePage = size_t{2} << 20;

void* system_allocate(size_t n) noexcept {
  const size_t refuse = g_system_refuses_above.load(std::memory_order_relaxed);
  if (refuse && n > refuse) return nullptr;
#ifdef MADV_HUGEPAGE
  if (n >= kHugePageMin) {
    const size_t rounded = round_up(n, kHugePage);
    void* p = std::aligned_alloc(kHugePage, rounded);
    if (p) madvise(p, rounded, MADV_HUGEPAGE);  // advice only: a refusal changes nothing
    return p;
  }
#endif
  return std::aligned_alloc(kAlignment, round_up(n, kAlignment));
}

size_t held(const HostCache& c) {
  return static_cast<size_t>(c.stats.bytes_in_use + c.stats.bytes_cached);
}

// What a trim gives back.
enum class Trim { kSegments, kSmall, kAll };

// Locked: moves up to kTrimBatch cached blocks into `out`, adding their bytes
// to `*freed`: whole free segments (kSegments, kAll: every one), then small
// blocks, largest first, while the cache holds more than `bound` (kSmall,
// kAll). Returns how many.
int take_for_trim(HostCache& c, Trim what, size_t bound, void** out, size_t* freed) {
  int k = 0;
  if (what != Trim::kSmall) {
    // A whole free segment is a free block with no neighbours.
    for (auto it = c.free_large.begin(); k < kTrimBatch && it != c.free_large.end();) {
      Block* b = it->second;
      if (b->prev || b->next) {
        ++it;
        continue;
      }
      out[k++] = b->ptr;
      *freed += b->size;
      c.stats.bytes_cached -= static_cast<int64_t>(b->size);
      c.trimmed++;
      c.segments--;
      it = c.free_large.erase(it);
      c.drop(b);
    }
  }
  if (what == Trim::kSegments) return k;
  while (k < kTrimBatch && held(c) > bound) {
    std::vector<void*>* largest = nullptr;
    size_t size = 0;
    for (auto& kv : c.free_blocks)
      if (!kv.second.empty() && kv.first > size) {
        size = kv.first;
        largest = &kv.second;
      }
    if (!largest) break;
    while (k < kTrimBatch && !largest->empty() && held(c) > bound) {
      out[k++] = largest->back();
      largest->pop_back();
      *freed += size;
      c.stats.bytes_cached -= static_cast<int64_t>(size);
      c.trimmed++;
    }
  }
  return k;
}

// Gives cached memory back to the system (see take_for_trim); returns the bytes.
size_t trim(HostCache& c, Trim what, size_t bound) {
  void* blocks[kTrimBatch];
  size_t freed = 0;
  for (;;) {
    int k;
    {
      std::lock_guard<std::mutex> lock(c.mutex);
      k = take_for_trim(c, what, bound, blocks, &freed);
    }
    for (int i = 0; i < k; ++i) std::free(blocks[i]);
    if (k < kTrimBatch) return freed;
  }
}

// Locked: the best-fitting free large block, split to `n` when the rest is
// worth keeping apart (else the whole block, `*size` says how large); null if
// none fits.
void* take_large(HostCache& c, size_t n, size_t* size) {
  auto it = c.free_large.lower_bound({n, nullptr});
  if (it == c.free_large.end()) return nullptr;
  Block* b = it->second;
  c.free_large.erase(it);
  if (b->size - n >= kMinSplit) {
    // Records and set nodes may throw; nothing has changed yet if they do.
    Block* rest = nullptr;
    try {
      rest = c.record(b->ptr + n, b->size - n, false, b, b->next);
      c.free_large.emplace(rest->size, rest);
    } catch (...) {
      if (rest) c.drop(rest);
      c.free_large.emplace(b->size, b);
      throw;
    }
    if (b->next) b->next->prev = rest;
    b->next = rest;
    b->size = n;
  }
  b->allocated = true;
  try {
    c.live_large.emplace(b->ptr, b);
  } catch (...) {
    b->allocated = false;
    c.free_large.emplace(b->size, b);  // (the split rest stays apart: merged on its next free)
    throw;
  }
  *size = b->size;
  return b->ptr;
}

// Locked: the block after `b` in its segment becomes part of `b`.
void absorb_next(HostCache& c, Block* b) {
  Block* n = b->next;
  b->size += n->size;
  b->next = n->next;
  if (n->next) n->next->prev = b;
  c.drop(n);
}

// Locked: a large block handed back (merged with free neighbours).
void give_large(HostCache& c, Block* b) {
  b->allocated = false;
  if (b->next && !b->next->allocated) {
    c.free_large.erase({b->next->size, b->next});
    absorb_next(c, b);
  }
  if (b->prev && !b->prev->allocated) {
    b = b->prev;
    c.free_large.erase({b->size, b});
    absorb_next(c, b);
  }
  c.free_large.emplace(b->size, b);
}

void raise_peaks(HostCache& c) {
  if (c.stats.bytes_in_use > c.stats.peak_bytes_in_use)
    c.stats.peak_bytes_in_use = c.stats.bytes_in_use;
  if (static_cast<size_t>(c.stats.bytes_in_use) > c.high_water)
    c.high_water = static_cast<size_t>(c.stats.bytes_in_use);
}

std::atomic<long long> g_fail_at{0};  // testing::fail_allocation_after; 0 = off
std::atomic<long long> g_counted{0};

}  // namespace

void testing::fail_allocation_after(long long n) {
  g_counted.store(0);
  g_fail_at.store(n > 0 ? n : 0);
}

long long testing::host_allocations_counted() { return g_counted.load(); }

void testing::refuse_system_allocations_above(size_t bytes) { g_system_refuses_above.store(bytes); }

long long testing::host_blocks_trimmed() {
  std::lock_guard<std::mutex> lock(cache().mutex);
  return cache().trimmed;
}

size_t testing::host_held_bound() {
  std::lock_guard<std::mutex> lock(cache().mutex);
  return held_bound(cache().high_water);
}

size_t testing::host_segments() {
  std::lock_guard<std::mutex> lock(cache().mutex);
  return cache().segments;
}

void* host_allocate(size_t nbytes) {
  if (g_fail_at.load(std::memory_order_relaxed) > 0 &&
      g_counted.fetch_add(1) + 1 == g_fail_at.load())
    fail(CH_ERR_OUT_OF_MEMORY, "out of host memory allocating ", nbytes,
         " bytes (injected failure, chainerc::testing::fail_allocation_after)");
  if (nbytes > (size_t{1} << 62))
    fail(CH_ERR_OUT_OF_MEMORY, "out of host memory: cannot allocate ", nbytes,
         " bytes (more than any machine has)");
  if (nbytes > kMaxCached) {
    // Too large to cache: straight from the system, counted as in use.
    void* p = system_allocate(nbytes);
    if (!p) fail(CH_ERR_OUT_OF_MEMORY, "out of host memory allocating ", nbytes, " bytes");
    HostCache& c = cache();
    std::lock_guard<std::mutex> lock(c.mutex);
    c.stats.allocations++;
    c.stats.cache_misses++;
    c.stats.bytes_in_use += static_cast<int64_t>(nbytes);
    raise_peaks(c);
    return p;
  }
  const size_t n = block_size(nbytes);
  const bool large = n > kLargeMin;
  HostCache& c = cache();
  size_t bound;
  {
    std::lock_guard<std::mutex> lock(c.mutex);
    c.stats.allocations++;
    void* p = nullptr;
    size_t got = n;
    if (large) {
      try {
        p = take_large(c, n, &got);
      } catch (const std::bad_alloc&) {
        fail(CH_ERR_OUT_OF_MEMORY, "out of host memory allocating ", nbytes,
             " bytes (no memory for the allocator's records)");
      }
    } else {
      auto it = c.free_blocks.find(n);
      if (it != c.free_blocks.end() && !it->second.empty()) {
        p = it->second.back();
        it->second.pop_back();
      }
    }
    if (p) {
      c.stats.bytes_cached -= static_cast<int64_t>(got);
      c.stats.bytes_in_use += static_cast<int64_t>(got);
      raise_peaks(c);
      return p;
    }
    c.stats.cache_misses++;
    // Counted as in use from here, so that concurrent misses see it (the
    // peaks are raised once the block exists).
    c.stats.bytes_in_use += static_cast<int64_t>(n);
    bound = held_bound(std::max(c.high_water, static_cast<size_t>(c.stats.bytes_in_use)));
  }
  // A miss adds to what the process holds. A large one first gathers the
  // free memory: every whole free segment goes back to the system and the new
  // segment is the request plus as much of their bytes as keeps the cache
  // under the bound, the rest of it free for later requests. So free memory
  // ends up in a few large segments, where best fit and merging reuse it for
  // other sizes, instead of in many that each fit one request. Then (for
  // small misses too) small cached blocks are given back, largest first,
  // while the cache would hold more than the bound.
  size_t seg = n;
  if (large) {
    const size_t freed = trim(c, Trim::kSegments, 0);
    std::lock_guard<std::mutex> lock(c.mutex);
    const size_t h = held(c), room = bound > h ? bound - h : 0;
    const size_t extra = std::min(freed, room) / kLargeRound * kLargeRound;
    if (extra >= kMinSplit) seg = n + extra;
  }
  trim(c, Trim::kSmall, bound > seg - n ? bound - (seg - n) : 0);
  void* p = system_allocate(seg);
  if (!p && seg > n) {
    seg = n;
    p = system_allocate(n);
  }
  if (!p) {
    // The system is out of memory: give back every cached block and retry once.
    trim(c, Trim::kAll, 0);
    seg = n;
    p = system_allocate(n);
  }
  std::lock_guard<std::mutex> lock(c.mutex);
  if (p && large) {
    Block* b = nullptr;
    try {
      b = c.record(static_cast<char*>(p), n, true, nullptr, nullptr);
      c.live_large.emplace(p, b);
    } catch (...) {
      if (b) c.drop(b);
      std::free(p);
      p = nullptr;
    }
    if (p) {
      c.segments++;
      if (seg > n) {
        Block* rest = nullptr;
        try {
          rest = c.record(b->ptr + n, seg - n, false, b, nullptr);
          c.free_large.emplace(rest->size, rest);
          b->next = rest;
          c.stats.bytes_cached += static_cast<int64_t>(seg - n);
        } catch (...) {
          // no memory for the records: the block keeps the whole segment
          if (rest) c.drop(rest);
          b->size = seg;
          c.stats.bytes_in_use += static_cast<int64_t>(seg - n);
        }
      }
    }
  }
  if (!p) {
    c.stats.bytes_in_use -= static_cast<int64_t>(n);
    fail(CH_ERR_OUT_OF_MEMORY, "out of host memory allocating ", nbytes, " bytes; ",
         c.stats.bytes_in_use, " bytes in use, ", c.stats.bytes_cached, " cached");
  }
  raise_peaks(c);
  return p;
}

void host_deallocate(void* ptr, size_t nbytes) noexcept {
  if (!ptr) return;
  HostCache& c = cache();
  if (nbytes > kMaxCached) {
    {
      std::lock_guard<std::mutex> lock(c.mutex);
      c.stats.bytes_in_use -= static_cast<int64_t>(nbytes);
    }
    std::free(ptr);
    return;
  }
  const size_t n = block_size(nbytes);
  {
    std::lock_guard<std::mutex> lock(c.mutex);
    if (n > kLargeMin) {
      auto it = c.live_large.find(ptr);
      if (it == c.live_large.end()) return;  // not ours: ignored
      Block* b = it->second;
      c.live_large.erase(it);
      c.stats.bytes_in_use -= static_cast<int64_t>(b->size);
      c.stats.bytes_cached += static_cast<int64_t>(b->size);
      try {
        give_large(c, b);
      } catch (...) {
        // no memory for the free set's node: the block stays out of reuse
        // (counted as cached) until its neighbours are freed into it
      }
      return;
    }
    c.stats.bytes_in_use -= static_cast<int64_t>(n);
    try {
      c.free_blocks[n].push_back(ptr);
      c.stats.bytes_cached += static_cast<int64_t>(n);
      return;
    } catch (...) {
      // no memory to remember the block: give it back instead
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
  trim(c, Trim::kAll, 0);
  std::lock_guard<std::mutex> lock(c.mutex);
  c.high_water = static_cast<size_t>(c.stats.bytes_in_use);
}

}  // namespace chainerc
