#include "caching_allocator.h"

#include <cstdio>
#include <vector>

#include "error.h"

namespace chainerc {
namespace {

struct HookState {
  std::mutex mutex;
  OomHook hook = nullptr;
  void* user_data = nullptr;
};

HookState& hook_state() {
  static HookState* s = new HookState;  // never destroyed: allocators outlive static teardown
  return *s;
}

size_t round_up(size_t n, size_t to) { return (n + to - 1) / to * to; }

std::string human(size_t n) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(n);
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  char buf[64];
  std::snprintf(buf, sizeof buf, u ? "%.2f %s (%zu bytes)" : "%.0f %s", v, units[u], n);
  return buf;
}

}  // namespace

void set_oom_hook(OomHook hook, void* user_data) {
  HookState& s = hook_state();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.hook = hook;
  s.user_data = user_data;
}

CachingAllocator::~CachingAllocator() {
  std::lock_guard<std::mutex> lock(mutex_);
  release_cached();
  // Segments with blocks still in use are left alone (their arrays may still
  // read them); only the block records go.
  for (Block* b : free_) delete b;
  for (auto& kv : live_) delete kv.second;
}

CachingAllocator::Block* CachingAllocator::take_free(size_t size, bool small, void* stream) {
  Block key{nullptr, size, stream, small};
  auto it = free_.lower_bound(&key);
  if (it == free_.end() || (*it)->small != small || (*it)->stream != stream) return nullptr;
  Block* b = *it;
  free_.erase(it);
  return b;
}

void CachingAllocator::split(Block* b, size_t size) {
  size_t rest = b->size - size;
  bool worth = b->small ? rest >= kRound : rest > kSmallRequest;
  if (!worth) return;
  Block* r = new Block{b->ptr + size, rest, b->stream, b->small};
  r->prev = b;
  r->next = b->next;
  if (b->next) b->next->prev = r;
  b->next = r;
  b->size = size;
  free_.insert(r);
}

void* CachingAllocator::try_allocate(size_t size, bool small, void* stream) {
  Block* b = take_free(size, small, stream);
  if (!b) {
    size_t seg = small ? kSmallSegment : round_up(size, kLargeRound);
    if (limit_ && reserved_ + seg > limit_) {
      release_cached();
      if (reserved_ + seg > limit_) return nullptr;
    }
    void* p = raw_.allocate(seg);
    if (!p) {
      if (release_cached() == 0) return nullptr;
      p = raw_.allocate(seg);
      if (!p) return nullptr;
    }
    stats_.cache_misses++;
    reserved_ += seg;
    b = new Block{static_cast<char*>(p), seg, stream, small};
    segments_.emplace(b->ptr, seg);
  }
  split(b, size);
  b->allocated = true;
  live_.emplace(b->ptr, b);
  stats_.bytes_in_use += static_cast<int64_t>(b->size);
  if (stats_.bytes_in_use > stats_.peak_bytes_in_use)
    stats_.peak_bytes_in_use = stats_.bytes_in_use;
  stats_.bytes_cached = static_cast<int64_t>(reserved_) - stats_.bytes_in_use;
  return b->ptr;
}

size_t CachingAllocator::release_cached() {
  size_t released = 0;
  for (auto it = free_.begin(); it != free_.end();) {
    Block* b = *it;
    // A whole segment is free when its only block is free.
    if (!b->prev && !b->next) {
      it = free_.erase(it);
      segments_.erase(b->ptr);
      raw_.deallocate(b->ptr, b->size);
      reserved_ -= b->size;
      released += b->size;
      delete b;
    } else {
      ++it;
    }
  }
  stats_.bytes_cached = static_cast<int64_t>(reserved_) - stats_.bytes_in_use;
  return released;
}

void* CachingAllocator::allocate(size_t nbytes, void* stream) {
  if (nbytes > (size_t{1} << 62))
    fail(CH_ERR_OUT_OF_MEMORY, "out of memory on ", device_.to_string(), ": cannot allocate ",
         nbytes, " bytes (more than any device has)");
  size_t size = round_up(nbytes ? nbytes : 1, kRound);
  bool small = size <= kSmallRequest;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stats_.allocations++;
    if (void* p = try_allocate(size, small, stream)) return p;
  }
  // Out of memory: let the host free what it can (its garbage collector may
  // hold arrays), without our lock, then retry once.
  OomHook hook;
  void* user_data;
  {
    HookState& s = hook_state();
    std::lock_guard<std::mutex> lock(s.mutex);
    hook = s.hook;
    user_data = s.user_data;
  }
  if (hook) hook(user_data, device_.to_c(), nbytes);
  std::lock_guard<std::mutex> lock(mutex_);
  if (void* p = try_allocate(size, small, stream)) return p;
  std::string why = raw_.last_error();
  fail(CH_ERR_OUT_OF_MEMORY, "out of memory on ", device_.to_string(), ": cannot allocate ",
       human(nbytes), "; ", human(static_cast<size_t>(stats_.bytes_in_use)), " in use, ",
       human(reserved_ - static_cast<size_t>(stats_.bytes_in_use)), " cached",
       limit_ ? ", limit " + human(limit_) : std::string(),
       hook ? "; the out-of-memory hook ran" : "", why.empty() ? "" : "; ", why);
}

void CachingAllocator::deallocate(void* ptr) noexcept {
  if (!ptr) return;
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = live_.find(ptr);
  if (it == live_.end()) return;
  Block* b = it->second;
  live_.erase(it);
  b->allocated = false;
  stats_.bytes_in_use -= static_cast<int64_t>(b->size);
  // Merge with free neighbours; the lower block absorbs the upper one.
  if (b->next && !b->next->allocated) {
    Block* n = b->next;
    free_.erase(n);
    b->size += n->size;
    b->next = n->next;
    if (n->next) n->next->prev = b;
    delete n;
  }
  if (b->prev && !b->prev->allocated) {
    Block* p = b->prev;
    free_.erase(p);
    p->size += b->size;
    p->next = b->next;
    if (b->next) b->next->prev = p;
    delete b;
    b = p;
  }
  free_.insert(b);
  stats_.bytes_cached = static_cast<int64_t>(reserved_) - stats_.bytes_in_use;
}

ch_memory_stats CachingAllocator::stats() {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

size_t CachingAllocator::reserved() {
  std::lock_guard<std::mutex> lock(mutex_);
  return reserved_;
}

void CachingAllocator::empty_cache() {
  std::lock_guard<std::mutex> lock(mutex_);
  release_cached();
}

void CachingAllocator::set_limit(size_t bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  limit_ = bytes;
  if (limit_ && reserved_ > limit_) release_cached();
}

size_t CachingAllocator::limit() {
  std::lock_guard<std::mutex> lock(mutex_);
  return limit_;
}

}  // namespace chainerc
