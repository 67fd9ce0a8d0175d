// The device side of the core, tested on the CPU (no GPU needed):
//  - CachingAllocator over a fake raw allocator that can be made to fail:
//    reuse, splitting and merging, statistics, streams, steady state, random
//    stress without growth, the limit, the out-of-memory hook and its retry,
//    empty_cache, and recovery after out-of-memory; blocks used on other
//    streams reused after their events (record_stream); graph-private pools;
//  - arrays on a CUDA device are never read on the host: every built-in
//    function refuses them with CH_ERR_DEVICE (a fake device pointer that
//    would crash if dereferenced);
//  - without a usable CUDA device, requests fail with CH_ERR_DEVICE.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "core/array.h"
#include "core/caching_allocator.h"
#include "core/device_backend.h"
#include "core/error.h"
#include "core/variable.h"
#include "ops/ops.h"

using namespace chainerc;

namespace {

constexpr size_t MiB = size_t{1} << 20;
const Device kDev{CH_DEVICE_CUDA, 0};

// malloc behind a fake device of `capacity` bytes that records what it does.
class FakeRaw final : public RawAllocator {
 public:
  size_t capacity = SIZE_MAX;
  size_t used = 0;
  int allocations = 0;
  int failures = 0;
  std::map<void*, size_t> live;

  void* allocate(size_t n) override {
    if (n > capacity - std::min(capacity, used)) {
      ++failures;
      return nullptr;
    }
    void* p = std::malloc(n);
    if (!p) return nullptr;
    used += n;
    ++allocations;
    live[p] = n;
    return p;
  }
  void deallocate(void* p, size_t n) noexcept override {
    auto it = live.find(p);
    EXPECT_NE(it, live.end());
    if (it == live.end()) return;
    EXPECT_EQ(it->second, n);
    used -= n;
    live.erase(it);
    std::free(p);
  }
  std::string last_error() override { return "fake device is full"; }
};

template <typename F>
Error error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e;
  }
  return Error(CH_OK, "");
}

size_t rounded(size_t n) { return (std::max<size_t>(n, 1) + 511) / 512 * 512; }

// Resets the process-wide hook however a test ends.
struct HookReset {
  ~HookReset() { set_oom_hook(nullptr, nullptr); }
};

TEST(CachingAllocator, ReusesFreedBlocksWithoutTheRawAllocator) {
  FakeRaw raw;
  CachingAllocator a(kDev, raw);
  void* p = a.allocate(1000);
  ASSERT_NE(p, nullptr);
  ch_memory_stats s = a.stats();
  EXPECT_EQ(s.bytes_in_use, 1024);
  EXPECT_EQ(s.cache_misses, 1);
  EXPECT_EQ(s.bytes_cached, static_cast<int64_t>(2 * MiB - 1024));
  a.deallocate(p);
  EXPECT_EQ(a.stats().bytes_in_use, 0);
  void* q = a.allocate(1000);
  EXPECT_EQ(q, p);
  s = a.stats();
  EXPECT_EQ(s.allocations, 2);
  EXPECT_EQ(s.cache_misses, 1);
  EXPECT_EQ(s.peak_bytes_in_use, 1024);
  EXPECT_EQ(raw.allocations, 1);
  a.deallocate(q);
}

TEST(CachingAllocator, SmallRequestsShareOneSegmentAndMergeBack) {
  FakeRaw raw;
  CachingAllocator a(kDev, raw);
  std::vector<void*> ps;
  for (int i = 0; i < 3; ++i) ps.push_back(a.allocate(512 * 1024));
  EXPECT_EQ(raw.allocations, 1);
  // Adjacent blocks, no overlap.
  EXPECT_EQ(static_cast<char*>(ps[1]) - static_cast<char*>(ps[0]), 512 * 1024);
  // Free in an order that needs merging on both sides.
  a.deallocate(ps[0]);
  a.deallocate(ps[2]);
  a.deallocate(ps[1]);
  void* big = a.allocate(MiB);  // still a small request: fits the merged segment
  EXPECT_EQ(raw.allocations, 1);
  EXPECT_EQ(big, ps[0]);
  a.deallocate(big);
  a.empty_cache();
  EXPECT_EQ(raw.used, 0u);
  EXPECT_EQ(a.reserved(), 0u);
}

TEST(CachingAllocator, LargeRequestsGetTheirOwnSegments) {
  FakeRaw raw;
  CachingAllocator a(kDev, raw);
  void* p = a.allocate(3 * MiB);
  EXPECT_EQ(raw.used, 4 * MiB);  // rounded to 2 MiB
  void* q = a.allocate(100);     // small pool: a separate segment
  EXPECT_EQ(raw.allocations, 2);
  a.deallocate(p);
  void* r = a.allocate(3 * MiB + 1);  // fits the freed large block
  EXPECT_EQ(r, p);
  EXPECT_EQ(raw.allocations, 2);
  a.deallocate(r);
  a.deallocate(q);
}

TEST(CachingAllocator, ZeroBytesGivesDistinctPointers) {
  FakeRaw raw;
  CachingAllocator a(kDev, raw);
  void* p = a.allocate(0);
  void* q = a.allocate(0);
  EXPECT_NE(p, nullptr);
  EXPECT_NE(p, q);
  a.deallocate(p);
  a.deallocate(q);
  a.deallocate(nullptr);  // no-op
  EXPECT_EQ(a.stats().bytes_in_use, 0);
}

TEST(CachingAllocator, BlocksAreReusedOnlyOnTheirStream) {
  FakeRaw raw;
  CachingAllocator a(kDev, raw);
  int s1 = 0, s2 = 0;
  void* p = a.allocate(4096, &s1);
  a.deallocate(p);
  void* q = a.allocate(4096, &s2);
  EXPECT_NE(q, p);
  EXPECT_EQ(raw.allocations, 2);
  void* r = a.allocate(4096, &s1);
  EXPECT_EQ(r, p);
  a.deallocate(q);
  a.deallocate(r);
}

// One "training step": the same sizes allocated and freed in the same order.
void run_step(CachingAllocator& a, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<void*> live;
  for (int i = 0; i < 200; ++i) {
    size_t n = size_t{1} << (rng() % 23);  // 1 B .. 4 MiB
    n += rng() % n;
    void* p = a.allocate(n);
    std::memset(p, 0xAB, std::min<size_t>(n, 64));
    live.push_back(p);
    if (rng() % 3 == 0) {
      size_t k = rng() % live.size();
      a.deallocate(live[k]);
      live.erase(live.begin() + static_cast<std::ptrdiff_t>(k));
    }
  }
  for (void* p : live) a.deallocate(p);
}

TEST(CachingAllocator, SteadyStateReachesTheRawAllocatorNoMore) {
  FakeRaw raw;
  CachingAllocator a(kDev, raw);
  run_step(a, 7);
  ch_memory_stats warm = a.stats();
  size_t reserved = a.reserved();
  for (int i = 0; i < 50; ++i) run_step(a, 7);
  ch_memory_stats s = a.stats();
  EXPECT_EQ(s.cache_misses, warm.cache_misses);
  EXPECT_EQ(a.reserved(), reserved);
  EXPECT_EQ(s.allocations, warm.allocations * 51);
  EXPECT_EQ(s.bytes_in_use, 0);
  a.empty_cache();
  EXPECT_EQ(raw.used, 0u);
}

TEST(CachingAllocator, RandomStressKeepsBlocksApartAndDoesNotGrow) {
  FakeRaw raw;
  CachingAllocator a(kDev, raw);
  std::mt19937 rng(12345);
  struct Live {
    unsigned char* p;
    size_t n;
    unsigned char tag;
  };
  std::vector<Live> live;
  int64_t expected_in_use = 0;
  size_t max_reserved_first = 0, max_reserved_second = 0;
  const int kOps = 20000;
  for (int op = 0; op < kOps; ++op) {
    bool alloc = live.empty() || (live.size() < 300 && rng() % 2 == 0);
    if (alloc) {
      size_t n = size_t{1} << (rng() % 23);
      n += rng() % n;
      auto* p = static_cast<unsigned char*>(a.allocate(n));
      unsigned char tag = static_cast<unsigned char>(rng());
      std::memset(p, tag, n);
      live.push_back({p, n, tag});
      expected_in_use += static_cast<int64_t>(rounded(n));
    } else {
      size_t k = rng() % live.size();
      Live b = live[k];
      // Nobody else wrote into this block while it was ours.
      for (size_t i = 0; i < b.n; i += std::max<size_t>(1, b.n / 64)) ASSERT_EQ(b.p[i], b.tag);
      ASSERT_EQ(b.p[b.n - 1], b.tag);
      a.deallocate(b.p);
      live[k] = live.back();
      live.pop_back();
      expected_in_use -= static_cast<int64_t>(rounded(b.n));
    }
    // A block may be larger than asked when the rest was too small to split
    // off (< 512 B in the small pool, <= 1 MiB in the large one).
    int64_t in_use = a.stats().bytes_in_use;
    ASSERT_GE(in_use, expected_in_use);
    ASSERT_LE(in_use, expected_in_use + static_cast<int64_t>(live.size() * MiB));
    size_t r = a.reserved();
    (op < kOps / 2 ? max_reserved_first : max_reserved_second) =
        std::max(op < kOps / 2 ? max_reserved_first : max_reserved_second, r);
  }
  // The same random workload for as long again needs no more memory.
  EXPECT_LE(max_reserved_second, max_reserved_first + max_reserved_first / 4);
  ch_memory_stats s = a.stats();
  EXPECT_EQ(s.bytes_cached, static_cast<int64_t>(a.reserved()) - s.bytes_in_use);
  for (const Live& b : live) a.deallocate(b.p);
  a.empty_cache();
  EXPECT_EQ(a.reserved(), 0u);
  EXPECT_EQ(raw.used, 0u);
  EXPECT_TRUE(raw.live.empty());
}

TEST(CachingAllocator, ThreadsAllocateConcurrently) {
  FakeRaw raw;
  CachingAllocator a(kDev, raw);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&a, t] {
      for (int i = 0; i < 10; ++i) run_step(a, static_cast<uint32_t>(t));
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(a.stats().bytes_in_use, 0);
  a.empty_cache();
  EXPECT_EQ(raw.used, 0u);
}

TEST(CachingAllocator, LimitCapsReservedBytesWithAClearError) {
  FakeRaw raw;
  CachingAllocator a(kDev, raw);
  a.set_limit(4 * MiB);
  EXPECT_EQ(a.limit(), 4 * MiB);
  void* p = a.allocate(3 * MiB);  // a 4 MiB segment
  Error e = error_of([&] { a.allocate(1000); });
  EXPECT_EQ(e.status(), CH_ERR_OUT_OF_MEMORY);
  std::string m = e.what();
  EXPECT_NE(m.find("cuda:0"), std::string::npos) << m;
  EXPECT_NE(m.find("1000 B"), std::string::npos) << m;
  EXPECT_NE(m.find("4.00 MiB (4194304 bytes) in use"), std::string::npos) << m;
  EXPECT_NE(m.find("limit 4.00 MiB"), std::string::npos) << m;
  // Still usable: freeing makes room.
  a.deallocate(p);
  void* q = a.allocate(1000);  // cached 4 MiB segment released, 2 MiB one made
  EXPECT_NE(q, nullptr);
  EXPECT_EQ(a.reserved(), 2 * MiB);
  a.deallocate(q);
  // Lowering the limit returns cached segments.
  a.set_limit(1 * MiB);
  EXPECT_EQ(a.reserved(), 0u);
  a.set_limit(0);
  void* r = a.allocate(8 * MiB);
  a.deallocate(r);
}

TEST(CachingAllocator, FullDeviceReturnsCacheBeforeFailing) {
  FakeRaw raw;
  raw.capacity = 6 * MiB;
  CachingAllocator a(kDev, raw);
  void* p = a.allocate(4 * MiB);
  a.deallocate(p);                // 4 MiB cached
  void* q = a.allocate(5 * MiB);  // needs a 6 MiB segment: the cached one goes first
  EXPECT_NE(q, nullptr);
  EXPECT_EQ(raw.failures, 1);
  EXPECT_EQ(a.reserved(), 6 * MiB);
  Error e = error_of([&] { a.allocate(4 * MiB); });
  EXPECT_EQ(e.status(), CH_ERR_OUT_OF_MEMORY);
  EXPECT_NE(std::string(e.what()).find("fake device is full"), std::string::npos) << e.what();
  a.deallocate(q);
}

struct HookState {
  int calls = 0;
  ch_device device{0, 0};
  size_t requested = 0;
  CachingAllocator* allocator = nullptr;
  std::vector<void*> garbage;  // what a garbage collector would free
};

void collect_garbage(void* user_data, ch_device device, size_t requested) {
  auto* h = static_cast<HookState*>(user_data);
  h->calls++;
  h->device = device;
  h->requested = requested;
  for (void* p : h->garbage) h->allocator->deallocate(p);
  h->garbage.clear();
}

TEST(CachingAllocator, OomHookRunsOnceAndTheRetrySucceeds) {
  HookReset reset;
  FakeRaw raw;
  raw.capacity = 8 * MiB;
  CachingAllocator a(kDev, raw);
  HookState h;
  h.allocator = &a;
  h.garbage.push_back(a.allocate(6 * MiB));
  set_oom_hook(collect_garbage, &h);
  void* p = a.allocate(5 * MiB);  // 6 MiB segment: only after the hook freed the garbage
  EXPECT_NE(p, nullptr);
  EXPECT_EQ(h.calls, 1);
  EXPECT_EQ(h.device.type, CH_DEVICE_CUDA);
  EXPECT_EQ(h.device.index, 0);
  EXPECT_EQ(h.requested, 5 * MiB);
  a.deallocate(p);
}

TEST(CachingAllocator, OomHookThatFreesNothingGivesOutOfMemoryOnce) {
  HookReset reset;
  FakeRaw raw;
  raw.capacity = 4 * MiB;
  CachingAllocator a(kDev, raw);
  HookState h;
  h.allocator = &a;
  set_oom_hook(collect_garbage, &h);
  void* held = a.allocate(3 * MiB);
  Error e = error_of([&] { a.allocate(3 * MiB); });
  EXPECT_EQ(e.status(), CH_ERR_OUT_OF_MEMORY);
  EXPECT_EQ(h.calls, 1);
  EXPECT_NE(std::string(e.what()).find("the out-of-memory hook ran"), std::string::npos)
      << e.what();
  // The allocator keeps working afterwards.
  a.deallocate(held);
  void* p = a.allocate(3 * MiB);
  EXPECT_EQ(p, held);
  EXPECT_EQ(h.calls, 1);
  a.deallocate(p);
  set_oom_hook(nullptr, nullptr);
  raw.capacity = 0;
  a.empty_cache();
  Error e2 = error_of([&] { a.allocate(1); });
  EXPECT_EQ(e2.status(), CH_ERR_OUT_OF_MEMORY);
  EXPECT_EQ(h.calls, 1);  // removed
  EXPECT_EQ(std::string(e2.what()).find("hook"), std::string::npos) << e2.what();
}

TEST(CachingAllocator, AbsurdRequestsFailWithoutOverflow) {
  FakeRaw raw;
  CachingAllocator a(kDev, raw);
  Error e = error_of([&] { a.allocate(SIZE_MAX); });
  EXPECT_EQ(e.status(), CH_ERR_OUT_OF_MEMORY);
  EXPECT_EQ(raw.allocations, 0);
}

TEST(CachingAllocator, EmptyCacheKeepsSegmentsInUse) {
  FakeRaw raw;
  CachingAllocator a(kDev, raw);
  void* p = a.allocate(100);
  void* q = a.allocate(3 * MiB);
  a.deallocate(q);
  a.empty_cache();
  EXPECT_EQ(a.reserved(), 2 * MiB);
  EXPECT_EQ(a.stats().bytes_cached, static_cast<int64_t>(2 * MiB - 512));
  std::memset(p, 1, 100);  // still valid
  a.deallocate(p);
  a.empty_cache();
  EXPECT_EQ(raw.used, 0u);
}

// A raw allocator with streams: events it records complete when told to
// (as a GPU finishes a stream's work), and waiting for one completes it.
class FakeRawWithEvents final : public RawAllocator {
 public:
  FakeRaw raw;
  struct Event {
    void* stream;
    bool done = false;
  };
  std::vector<Event*> events;
  int waits = 0;
  int released = 0;
  void* allocate(size_t n) override { return raw.allocate(n); }
  void deallocate(void* p, size_t n) noexcept override { raw.deallocate(p, n); }
  void* record_event(void* stream) override {
    events.push_back(new Event{stream});
    return events.back();
  }
  bool event_done(void* e) override { return static_cast<Event*>(e)->done; }
  void event_wait(void* e) override {
    ++waits;
    static_cast<Event*>(e)->done = true;
  }
  void event_release(void* e) noexcept override {
    ++released;
    (void)e;  // kept in `events` for the test to inspect
  }
  ~FakeRawWithEvents() override {
    for (Event* e : events) delete e;
  }
};

TEST(CachingAllocator, ABlockUsedOnAnotherStreamWaitsForItsEvent) {
  FakeRawWithEvents raw;
  CachingAllocator a(kDev, raw);
  int s1 = 0, s2 = 0;
  void* p = a.allocate(3 * MiB, &s1);  // a segment of its own
  a.record_stream(p, &s2);
  a.record_stream(p, &s2);  // once per stream
  a.record_stream(p, &s1);  // its own stream: nothing
  a.deallocate(p);
  ASSERT_EQ(raw.events.size(), 1u);
  EXPECT_EQ(raw.events[0]->stream, &s2);
  EXPECT_EQ(a.blocks_waiting_for_events(), 1u);
  EXPECT_EQ(a.stats().bytes_in_use, static_cast<int64_t>(4 * MiB)) << "counted until reusable";
  void* q = a.allocate(3 * MiB, &s1);
  EXPECT_NE(q, p) << "reused before the other stream was done with it";
  raw.events[0]->done = true;
  void* r = a.allocate(3 * MiB, &s1);
  EXPECT_EQ(r, p);
  EXPECT_EQ(raw.released, 1);
  EXPECT_EQ(raw.waits, 0) << "no waiting where memory was there";
  a.deallocate(q);
  a.deallocate(r);
  EXPECT_EQ(a.stats().bytes_in_use, 0);
}

TEST(CachingAllocator, ShortOfMemoryItWaitsForEventsBeforeFailing) {
  FakeRawWithEvents raw;
  raw.raw.capacity = 4 * MiB;
  CachingAllocator a(kDev, raw);
  int s1 = 0, s2 = 0;
  void* p = a.allocate(3 * MiB, &s1);
  a.record_stream(p, &s2);
  a.deallocate(p);
  void* q = a.allocate(3 * MiB, &s1);  // the device is full: the event is waited for
  EXPECT_EQ(q, p);
  EXPECT_EQ(raw.waits, 1);
  a.deallocate(q);
  // empty_cache waits too, then returns the segment.
  q = a.allocate(3 * MiB, &s1);
  a.record_stream(q, &s2);
  a.deallocate(q);
  a.empty_cache();
  EXPECT_EQ(raw.waits, 2);
  EXPECT_EQ(raw.raw.used, 0u);
}

TEST(CachingAllocator, APrivatePoolKeepsItsMemoryUntilReleased) {
  FakeRaw raw;
  CachingAllocator a(kDev, raw);
  void* before = a.allocate(4096);  // the common cache
  const int pool = a.begin_private_pool();
  EXPECT_GT(pool, 0);
  EXPECT_EQ(error_of([&] { a.begin_private_pool(); }).status(), CH_ERR_INVALID_ARGUMENT);
  void* in = a.allocate(4096);
  EXPECT_EQ(raw.allocations, 2) << "the pool has segments of its own";
  // Freed during the capture: a block from outside is held (the graph may
  // use it), one of the pool's is reused within the capture.
  a.deallocate(before);
  void* again = a.allocate(4096);
  EXPECT_NE(again, before);
  a.deallocate(again);
  EXPECT_EQ(a.allocate(4096), again);
  a.empty_cache();  // nothing goes back during a capture
  EXPECT_EQ(raw.live.size(), 2u);
  a.end_private_pool();
  // Outside: neither the pool's memory nor the held block.
  void* outside = a.allocate(4096);
  EXPECT_NE(outside, before);
  EXPECT_NE(outside, in);
  EXPECT_NE(outside, again);
  a.deallocate(outside);
  a.release_private_pool(pool);
  a.deallocate(in);
  a.deallocate(again);
  EXPECT_EQ(a.stats().bytes_in_use, 0);
  a.empty_cache();
  EXPECT_EQ(raw.used, 0u) << "every segment returns after the pool's release";
}

// A CUDA array whose pointer would crash if the host touched it.
Array fake_cuda_array() {
  void* bogus = reinterpret_cast<void*>(uintptr_t{16});
  return Array(Buffer::wrap(bogus, 6 * sizeof(float), kDev, nullptr, nullptr), DType::Float32,
               Shape({2, 3}));
}

TEST(DeviceArrays, BuiltInFunctionsRefuseThemBeforeTouchingMemory) {
  auto x = std::make_shared<VariableImpl>(fake_cuda_array());
  auto c = std::make_shared<VariableImpl>(Array::zeros(DType::Float32, Shape({2, 3})));
  for (auto f : {+[](const VarPtr&a, const VarPtr&) { return ops::relu(a); },
                 +[](const VarPtr&a, const VarPtr&) { return ops::sum(a); },
                 +[](const VarPtr&a, const VarPtr&b) { return ops::add(b, a); },
                 +[](const VarPtr&a, const VarPtr&b) { return ops::mul(a, b); }}) {
    Error e = error_of([&] { f(x, c); });
    EXPECT_EQ(e.status(), CH_ERR_DEVICE) << e.what();
    EXPECT_NE(std::string(e.what()).find("cuda:0"), std::string::npos) << e.what();
  }
  // With a CPU operand the one-device rule refuses the mix and names both devices.
  Error e = error_of([&] { ops::add(c, x); });
  EXPECT_NE(std::string(e.what()).find("input 1 is on cuda:0 but input 0 is on cpu"),
            std::string::npos)
      << e.what();
}

TEST(DeviceArrays, HostReadsOfThemGoThroughTheBackend) {
  Array a = fake_cuda_array();
  if (cuda_backend() && cuda_backend()->device_count() > 0) GTEST_SKIP() << "a CUDA device exists";
  // No device: every host access is a CH_ERR_DEVICE error, never a read.
  EXPECT_EQ(error_of([&] { a.get(0); }).status(), CH_ERR_DEVICE);
  EXPECT_EQ(error_of([&] { a.copy(); }).status(), CH_ERR_DEVICE);
  EXPECT_EQ(error_of([&] { a.fill(1.0); }).status(), CH_ERR_DEVICE);
  EXPECT_EQ(error_of([&] { a.to_device(Device{}); }).status(), CH_ERR_DEVICE);
  EXPECT_EQ(error_of([&] { Array::empty(DType::Float32, Shape({2}), kDev); }).status(),
            CH_ERR_DEVICE);
  Error e = error_of([&] { Array::zeros(DType::Float32, Shape({2}), Device{CH_DEVICE_CUDA, 3}); });
  EXPECT_EQ(e.status(), CH_ERR_DEVICE);
  EXPECT_NE(std::string(e.what()).find("cuda:3"), std::string::npos) << e.what();
  EXPECT_NE(std::string(e.what()).find(cuda_backend() ? "no CUDA device" : "no CUDA backend"),
            std::string::npos)
      << e.what();
}

TEST(DeviceArrays, CpuArraysBehaveAsBefore) {
  Array a = Array::full(DType::Float64, Shape({3}), 2.5);
  Array b = a.to_device(Device{});
  EXPECT_FALSE(b.shares_memory_with(a));
  EXPECT_EQ(b.get(2), 2.5);
  EXPECT_EQ(a.copy().get(0), 2.5);
  EXPECT_FALSE(a.buffer()->pinned());
}

}  // namespace
