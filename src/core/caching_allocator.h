// A caching allocator over a raw allocator (cudaMalloc for a CUDA device, or a
// fake in the tests): blocks freed by arrays are kept and handed out again,
// so a training loop reaches the raw allocator only while it warms up.
//
// Memory comes from the raw allocator in segments; a segment is split into
// blocks and freed neighbours merge again. Requests are rounded to 512 bytes.
// Small requests (<= 1 MiB) share 2 MiB segments; larger ones get a segment
// of their own size rounded to 2 MiB, split only when the rest is large.
// Blocks remember the stream they were allocated on and are reused only on
// that stream (a block freed on the host may still be in use by queued work
// on its stream; work on the same stream is ordered after it). A block used
// on other streams too is told so (record_stream, as PyTorch's): when it is
// freed, an event is recorded on each of those streams, and the block is
// reused only once they have all completed (queried at each allocation; on
// out of memory and empty_cache, waited for).
//
// CUDA graph capture (begin_private_pool .. end_private_pool): allocations
// come from a pool of the graph's own, whose memory no allocation outside it
// gets until release_private_pool; blocks freed during the capture that came
// from outside the pool are held until then too (the graph's replays still
// use them), and nothing is returned to the raw allocator meanwhile (a
// cudaFree cannot be captured).
//
// When the raw allocator fails or the limit would be passed, the allocator
// returns its unused cached segments and retries; then it calls the process's
// out-of-memory hook once (without holding its lock, so the hook may release
// arrays) and retries once more; then it throws Error(CH_ERR_OUT_OF_MEMORY)
// naming the device, the request and the bytes in use.
#pragma once

#include <ch/common.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "dtype.h"

namespace chainerc {

class RawAllocator {
 public:
  virtual ~RawAllocator() = default;
  // nbytes of memory, or null when there is not enough (other failures throw).
  virtual void* allocate(size_t nbytes) = 0;
  virtual void deallocate(void* ptr, size_t nbytes) noexcept = 0;
  // Why the last allocate() returned null, for the error message ("" if unknown).
  virtual std::string last_error() { return ""; }
  // Events for blocks used on streams other than their own: one recorded now
  // on `stream` (null: none needed), whether it has completed, waiting for
  // it, releasing it. The defaults have no streams: complete at once.
  virtual void* record_event(void* stream) {
    (void)stream;
    return nullptr;
  }
  virtual bool event_done(void* event) {
    (void)event;
    return true;
  }
  virtual void event_wait(void* event) { (void)event; }
  virtual void event_release(void* event) noexcept { (void)event; }
};

// The process's out-of-memory hook (ch_memory_set_oom_hook); null = none.
using OomHook = void (*)(void* user_data, ch_device device, size_t requested_bytes);
void set_oom_hook(OomHook hook, void* user_data);

class CachingAllocator {
 public:
  static constexpr size_t kRound = 512;
  static constexpr size_t kSmallRequest = size_t{1} << 20;  // <= this: small pool
  static constexpr size_t kSmallSegment = size_t{2} << 20;
  static constexpr size_t kLargeRound = size_t{2} << 20;

  CachingAllocator(Device device, RawAllocator& raw) : device_(device), raw_(raw) {}
  ~CachingAllocator();  // returns every segment (blocks still in use leak, by design)
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  // At least nbytes (0 gives a valid, unique pointer), ordered on `stream`.
  void* allocate(size_t nbytes, void* stream = nullptr);
  // A pointer from allocate(); null is a no-op; unknown pointers are ignored.
  void deallocate(void* ptr) noexcept;
  // The block at `ptr` (from allocate(), in use) is used on `stream` as well
  // as on its own: its reuse after deallocate waits for that stream's work
  // queued until then. Unknown pointers and the block's own stream: no-op.
  void record_stream(void* ptr, void* stream);

  // Graph-private pools (CUDA graph capture): from begin_private_pool until
  // end_private_pool every allocation comes from a new pool (its id is
  // returned), and nothing is given back to the raw allocator. Error
  // (CH_ERR_INVALID_ARGUMENT) when a pool is already open.
  int begin_private_pool();
  void end_private_pool() noexcept;
  // The pool's memory and the blocks held for it join the common cache.
  void release_private_pool(int id) noexcept;
  // Blocks whose reuse waits for events (tests).
  size_t blocks_waiting_for_events();

  ch_memory_stats stats();
  // Bytes held from the raw allocator (in use + cached).
  size_t reserved();
  // Return every segment none of whose blocks is in use.
  void empty_cache();
  // Cap on reserved() (0 = no limit). Lowering it below what is reserved
  // returns cached segments; blocks in use are not touched.
  void set_limit(size_t bytes);
  size_t limit();

 private:
  struct Block {
    Block(char* p, size_t n, void* s, bool sm) : ptr(p), size(n), stream(s), small(sm) {}
    char* ptr;
    size_t size;
    void* stream;
    bool small;
    int pool = 0;  // 0: the common cache; else a graph's private pool
    bool allocated = false;
    int events = 0;           // freed, waiting for this many events
    std::vector<void*> uses;  // other streams that used it (record_stream)
    Block* prev = nullptr;    // neighbours in the same segment
    Block* next = nullptr;
  };
  // Free blocks ordered by (small, pool, stream, size, address): best fit.
  struct FreeOrder {
    bool operator()(const Block* a, const Block* b) const {
      return std::make_tuple(a->small, a->pool, a->stream, a->size, a->ptr) <
             std::make_tuple(b->small, b->pool, b->stream, b->size, b->ptr);
    }
  };

  void* try_allocate(size_t size, bool small, void* stream);  // locked; null if no memory
  size_t release_cached();                                    // locked; bytes returned
  Block* take_free(size_t size, bool small, int pool, void* stream);
  void split(Block* b, size_t size);
  void free_block(Block* b);  // locked: merge and make reusable
  void process_events();      // locked: free the blocks whose events completed
  void wait_events();         // locked: wait for every pending event, free the blocks

  Device device_;
  RawAllocator& raw_;
  std::mutex mutex_;
  std::set<Block*, FreeOrder> free_;
  std::unordered_map<void*, Block*> live_;  // allocated blocks by address
  std::map<char*, size_t> segments_;        // segment start -> size
  size_t reserved_ = 0;
  size_t limit_ = 0;
  ch_memory_stats stats_{};
  std::vector<std::pair<Block*, void*>> pending_events_;  // (block, event)
  int capture_pool_ = 0;                                  // the open private pool
  int next_pool_ = 1;
  std::map<int, std::vector<Block*>> held_;  // blocks freed during a pool's capture
};

}  // namespace chainerc
