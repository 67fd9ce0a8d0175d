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
  capture_pool_ = 0;
  for (auto& be : pending_events_) raw_.event_release(be.second);
  release_cached();
  // Segments with blocks still in use are left alone (their arrays may still
  // read them); only the block records go.
  std::set<Block*> blocks(free_.begin(), free_.end());
  for (auto& kv : live_) blocks.insert(kv.second);
  for (auto& be : pending_events_) blocks.insert(be.first);
  for (auto& kv : held_) blocks.insert(kv.second.begin(), kv.second.end());
  for (Block* b : blocks) delete b;
}

CachingAllocator::Block* CachingAllocator::take_free(size_t size, bool small, int pool,
                                                     void* stream) {
  Block key{nullptr, size, stream, small};
  key.pool = pool;
  auto it = free_.lower_bound(&key);
  if (it == free_.end() || (*it)->small != small || (*it)->pool != pool || (*it)->stream != stream)
    return nullptr;
  Block* b = *it;
  free_.erase(it);
  return b;
}

void CachingAllocator::split(Block* b, size_t size) {
  size_t rest = b->size - size;
  bool worth = b->small ? rest >= kRound : rest > kSmallRequest;
  if (!worth) return;
  Block* r = new Block{b->ptr + size, rest, b->stream, b->small};
  r->pool = b->pool;
  r->prev = b;
  r->next = b->next;
  if (b->next) b->next->prev = r;
  b->next = r;
  b->size = size;
  free_.insert(r);
}

void* CachingAllocator::try_allocate(size_t size, bool small, void* stream) {
  if (!pending_events_.empty()) process_events();
  Block* b = take_free(size, small, capture_pool_, stream);
  // Short of memory: first wait for the events of the blocks freed while
  // other streams used them (a host synchronisation, on this path only).
  auto reclaim = [&] {
    if (pending_events_.empty() || capture_pool_ != 0) return false;
    wait_events();
    b = take_free(size, small, capture_pool_, stream);
    return b != nullptr;
  };
  if (!b) {
    const size_t seg = small ? kSmallSegment : round_up(size, kLargeRound);
    void* p = nullptr;
    if (limit_ && reserved_ + seg > limit_ && !reclaim()) {
      release_cached();
      if (reserved_ + seg > limit_) return nullptr;
    }
    if (!b) {
      p = raw_.allocate(seg);
      if (!p && !reclaim()) {
        if (release_cached() == 0) return nullptr;
        p = raw_.allocate(seg);
        if (!p) return nullptr;
      }
    }
    if (p) {
      stats_.cache_misses++;
      reserved_ += seg;
      b = new Block{static_cast<char*>(p), seg, stream, small};
      b->pool = capture_pool_;
      segments_.emplace(b->ptr, seg);
    }
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
  // During a capture nothing goes back (cudaFree is not stream-ordered).
  if (capture_pool_ != 0) return 0;
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
  if (capture_pool_ != 0 && b->pool != capture_pool_) {
    // Used by the capture, perhaps: the graph's replays may still use it.
    b->uses.clear();
    held_[capture_pool_].push_back(b);
    return;
  }
  for (void* s : b->uses) {
    void* ev = nullptr;
    try {
      ev = raw_.record_event(s);  // null when the raw allocator waited instead
    } catch (...) {
    }
    if (ev) {
      pending_events_.emplace_back(b, ev);
      ++b->events;
    }
  }
  b->uses.clear();
  if (b->events == 0) free_block(b);
}

void CachingAllocator::free_block(Block* b) {
  b->allocated = false;
  stats_.bytes_in_use -= static_cast<int64_t>(b->size);
  // Merge with free neighbours of the same pool; the lower block absorbs the
  // upper one.
  auto mergeable = [b](const Block* n) {
    return n && !n->allocated && n->events == 0 && n->pool == b->pool;
  };
  if (mergeable(b->next)) {
    Block* n = b->next;
    free_.erase(n);
    b->size += n->size;
    b->next = n->next;
    if (n->next) n->next->prev = b;
    delete n;
  }
  if (mergeable(b->prev)) {
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

void CachingAllocator::process_events() {
  std::vector<std::pair<Block*, void*>> still;
  for (auto& be : pending_events_) {
    if (!raw_.event_done(be.second)) {
      still.push_back(be);
      continue;
    }
    raw_.event_release(be.second);
    if (--be.first->events == 0) free_block(be.first);
  }
  pending_events_.swap(still);
}

void CachingAllocator::wait_events() {
  for (auto& be : pending_events_) raw_.event_wait(be.second);
  process_events();
}

void CachingAllocator::record_stream(void* ptr, void* stream) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = live_.find(ptr);
  if (it == live_.end()) return;
  Block* b = it->second;
  if (stream == b->stream) return;
  for (void* s : b->uses)
    if (s == stream) return;
  b->uses.push_back(stream);
}

int CachingAllocator::begin_private_pool() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (capture_pool_ != 0)
    fail(CH_ERR_INVALID_ARGUMENT, "memory of ", device_.to_string(),
         ": a graph's private pool is open already (one capture at a time on a device)");
  capture_pool_ = next_pool_++;
  held_[capture_pool_];
  return capture_pool_;
}

void CachingAllocator::end_private_pool() noexcept {
  std::lock_guard<std::mutex> lock(mutex_);
  capture_pool_ = 0;
}

void CachingAllocator::release_private_pool(int id) noexcept {
  std::lock_guard<std::mutex> lock(mutex_);
  if (id == 0) return;
  if (capture_pool_ == id) capture_pool_ = 0;
  // Every block of the pool joins the common cache: free ones re-keyed, the
  // ones in use or waiting for events when they are freed.
  std::vector<Block*> free_of_pool;
  for (Block* b : free_)
    if (b->pool == id) free_of_pool.push_back(b);
  for (Block* b : free_of_pool) {
    // Taken out, and counted in use until free_block puts it back, so that
    // no neighbour merges with it meanwhile.
    free_.erase(b);
    b->pool = 0;
    b->allocated = true;
    stats_.bytes_in_use += static_cast<int64_t>(b->size);
  }
  for (auto& kv : live_)
    if (kv.second->pool == id) kv.second->pool = 0;
  for (auto& be : pending_events_)
    if (be.first->pool == id) be.first->pool = 0;
  for (Block* b : free_of_pool) free_block(b);
  auto h = held_.find(id);
  if (h != held_.end()) {
    std::vector<Block*> held = std::move(h->second);
    held_.erase(h);
    for (Block* b : held) free_block(b);
  }
}

size_t CachingAllocator::blocks_waiting_for_events() {
  std::lock_guard<std::mutex> lock(mutex_);
  std::set<Block*> blocks;
  for (auto& be : pending_events_) blocks.insert(be.first);
  return blocks.size();
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
  if (capture_pool_ == 0) wait_events();
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
