// CPU threading for the kernels: one process-wide pool of worker threads
// (which poll for about 1 millisecond after a job, then sleep on a
// condition variable, so an idle process uses no CPU), and parallel_for that
// splits a range among them when it is large enough to pay for the hand-off.
// The GEMMs run on this pool as well (gemm.cpp), so no second pool competes
// for the cores.
#pragma once

#include <cstdint>
#include <functional>

namespace chainerc::cpu {

// Threads a kernel may use, the calling thread included (>= 1). The default
// is CH_NUM_THREADS from the environment, else the number of cores.
int num_threads();
// Sets the kernels' thread count and the BLAS library's to n (>= 1).
void set_num_threads(int n);
// Whether the calling thread runs a chunk of a parallel_for (a pool worker,
// or the caller during its own job): a parallel_for from here runs inline.
bool in_parallel_region_now();

namespace detail {
// Moves the calling thread to a CPU other than busy_cpu that it may use (the
// nth of them, wrapping), by narrowing its affinity to that CPU and widening
// it back: the thread is not left pinned. Nothing where it may use no other
// CPU, busy_cpu is negative, or off Linux. (The pool's workers call it; a
// declaration here for the tests.)
void move_off_cpu(int busy_cpu, int nth);
void parallel_run(int64_t n, int64_t chunks, const std::function<void(int64_t, int64_t)>& body);
}  // namespace detail

// body(begin, end) over [0, n) in contiguous chunks of at least `grain`
// elements, on up to num_threads() threads. Small ranges, and calls from
// inside another parallel_for, run inline. The body must not throw.
template <typename F>
void parallel_for(int64_t n, int64_t grain, F&& body) {
  if (n <= 0) return;
  int64_t threads = num_threads();
  int64_t chunks = grain > 0 ? n / grain : n;
  if (chunks > threads) chunks = threads;
  if (chunks <= 1) {
    body(int64_t{0}, n);
    return;
  }
  detail::parallel_run(n, chunks, std::function<void(int64_t, int64_t)>(body));
}

// Elements below which an elementwise kernel stays on one thread.
constexpr int64_t kElementwiseGrain = 32768;

}  // namespace chainerc::cpu
