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
// on its stream; work on the same stream is ordered after it).
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
    char* ptr;
    size_t size;
    void* stream;
    bool small;
    bool allocated = false;
    Block* prev = nullptr;  // neighbours in the same segment
    Block* next = nullptr;
  };
  // Free blocks ordered by (small pool, stream, size, address): best fit.
  struct FreeOrder {
    bool operator()(const Block* a, const Block* b) const {
      return std::make_tuple(a->small, a->stream, a->size, a->ptr) <
             std::make_tuple(b->small, b->stream, b->size, b->ptr);
    }
  };

  void* try_allocate(size_t size, bool small, void* stream);  // locked; null if no memory
  size_t release_cached();                                    // locked; bytes returned
  Block* take_free(size_t size, bool small, void* stream);
  void split(Block* b, size_t size);

  Device device_;
  RawAllocator& raw_;
  std::mutex mutex_;
  std::set<Block*, FreeOrder> free_;
  std::unordered_map<void*, Block*> live_;  // allocated blocks by address
  std::map<char*, size_t> segments_;        // segment start -> size
  size_t reserved_ = 0;
  size_t limit_ = 0;
  ch_memory_stats stats_{};
};

}  // namespace chainerc
