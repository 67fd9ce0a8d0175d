// Counts the bytes a process holds from malloc and friends, and their peak,
// by defining malloc, free, ... in the benchmark executable: the dynamic
// linker then binds every library's calls to these (chainerc's arrays,
// libtorch's tensors, oneDNN's and OpenBLAS's packing buffers, C++ new), and
// each forwards to glibc's own allocator (__libc_malloc and friends). Memory
// mapped directly (JIT code, OpenBLAS's buffer pool) and library code pages
// are not heap; VmHWM in bench/train covers those.
#include "heap_tracker.h"

#include <execinfo.h>
#include <malloc.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

extern "C" {
void* __libc_malloc(size_t);
void __libc_free(void*);
void* __libc_calloc(size_t, size_t);
void* __libc_realloc(void*, size_t);
void* __libc_memalign(size_t, size_t);
}

namespace {

std::atomic<int64_t> g_in_use{0}, g_peak{0};
std::atomic<int64_t> g_phase_peak{0};  // the peak since heap_reset_phase_peak (attribution)

void raise_peak(std::atomic<int64_t>& peak, int64_t now) {
  int64_t p = peak.load(std::memory_order_relaxed);
  while (now > p && !peak.compare_exchange_weak(p, now)) {
  }
}

// CH_BENCH_HEAP_TRACE=BYTES: the call stack of every allocation of at least BYTES on stderr
// (attributing heap that is not arrays: workspaces, JIT code, caches). Read at the first
// allocation; -1 until then.
std::atomic<int64_t> g_trace_bytes{-1};
thread_local bool t_tracing = false;

void trace(void* p) {
  int64_t min = g_trace_bytes.load(std::memory_order_relaxed);
  if (min < 0) {
    const char* v = std::getenv("CH_BENCH_HEAP_TRACE");
    min = v ? std::atoll(v) : 0;
    g_trace_bytes.store(min);
  }
  if (min <= 0 || t_tracing || malloc_usable_size(p) < static_cast<size_t>(min)) return;
  t_tracing = true;  // backtrace may allocate the first time (it loads libgcc_s)
  void* frames[24];
  const int n = backtrace(frames, 24);
  char line[96];
  const int len =
      std::snprintf(line, sizeof line, "heap trace: %zu bytes\n", malloc_usable_size(p));
  if (len > 0) (void)!write(2, line, static_cast<size_t>(len));
  backtrace_symbols_fd(frames, n, 2);
  t_tracing = false;
}

void* counted(void* p) {
  if (p) {
    trace(p);
    const int64_t now = g_in_use.fetch_add(static_cast<int64_t>(malloc_usable_size(p))) +
                        static_cast<int64_t>(malloc_usable_size(p));
    raise_peak(g_peak, now);
    raise_peak(g_phase_peak, now);
  }
  return p;
}

void uncount(void* p) {
  if (p) g_in_use.fetch_sub(static_cast<int64_t>(malloc_usable_size(p)));
}

bool valid_alignment(size_t a) { return a >= sizeof(void*) && (a & (a - 1)) == 0; }

}  // namespace

extern "C" {

void* malloc(size_t n) { return counted(__libc_malloc(n)); }
void free(void* p) {
  uncount(p);
  __libc_free(p);
}
void* calloc(size_t n, size_t size) { return counted(__libc_calloc(n, size)); }
void* realloc(void* p, size_t n) {
  const int64_t before = p ? static_cast<int64_t>(malloc_usable_size(p)) : 0;
  void* q = __libc_realloc(p, n);
  if (q || n == 0) g_in_use.fetch_sub(before);  // the old block is gone
  return q ? counted(q) : q;
}
void* memalign(size_t alignment, size_t n) { return counted(__libc_memalign(alignment, n)); }
void* aligned_alloc(size_t alignment, size_t n) { return counted(__libc_memalign(alignment, n)); }
int posix_memalign(void** out, size_t alignment, size_t n) {
  if (!valid_alignment(alignment)) return EINVAL;
  void* p = __libc_memalign(alignment, n);
  if (!p) return ENOMEM;
  *out = counted(p);
  return 0;
}
void* valloc(size_t n) { return counted(__libc_memalign(4096, n)); }
void* pvalloc(size_t n) { return counted(__libc_memalign(4096, (n + 4095) / 4096 * 4096)); }

}  // extern "C"

namespace bench {

int64_t heap_in_use() { return g_in_use.load(); }

int64_t heap_reset_peak() {
  const int64_t now = g_in_use.load();
  g_peak.store(now);
  return now;
}

int64_t heap_peak() { return g_peak.load(); }

int64_t heap_reset_phase_peak() {
  const int64_t now = g_in_use.load();
  g_phase_peak.store(now);
  return now;
}

int64_t heap_phase_peak() { return g_phase_peak.load(); }

}  // namespace bench
