#include "parallel.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

#if defined(__linux__)
#include <sched.h>
#endif

#include "core/error.h"
#include "gemm.h"

namespace chainerc::cpu {
namespace {

int default_threads() {
  if (const char* env = std::getenv("CH_NUM_THREADS")) {
    int n = std::atoi(env);
    if (n >= 1) return n;
  }
  unsigned hw = std::thread::hardware_concurrency();
  return hw ? static_cast<int>(hw) : 1;
}

std::atomic<int> g_threads{0};                 // 0 = not yet initialised
thread_local bool in_parallel_region = false;  // nested parallel_for runs inline

// How long an idle thread polls for the next job (or the caller for its
// workers' last chunks) before it sleeps on a condition variable. Training
// loops issue parallel jobs tens to hundreds of microseconds apart; waking a
// sleeping thread costs a futex call on each side and, on a virtual machine,
// often tens of microseconds before the thread runs. The GEMMs run on this
// pool too (see gemm.cpp), so there is no other library pool for the polling
// to take cores from; after this long without work a thread sleeps, so an
// idle process uses no CPU. 1 ms outlasts the serial stretches between a
// small model's parallel GEMMs (chosen by measurement:
// bench/results/constants.md, kPollTime).
constexpr auto kPollTime = std::chrono::microseconds(1000);

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

// Polls `done` until it returns true or kPollTime passes; returns its value.
template <typename Done>
bool poll_for(Done done) {
  const auto deadline = std::chrono::steady_clock::now() + kPollTime;
  for (;;) {
    for (int i = 0; i < 64; ++i) {
      if (done()) return true;
      cpu_relax();
    }
    if (std::chrono::steady_clock::now() >= deadline) return done();
  }
}

// A new thread starts on its creator's CPU, and Linux's load balancer moves
// it to an idle one only after several milliseconds (measured:
// bench/results/constants.md, move_off_cpu): until then a two-thread job runs at
// the one-thread rate, and the GEMM choice, made on the first calls of a
// process, judges splitting C by it. The same happens later: a thread woken
// by another is often placed on its waker's CPU, so a worker and its caller
// can end up sharing one CPU while the other idles, for 100 ms and more
// (once there, each waits out its poll while the other runs and sleeps, and
// the next wake-up places them together again). So a worker that finds itself on its
// caller's CPU (at its start, or when it takes a job) asks for one CPU other
// than the caller's (detail::move_off_cpu, at the end of this file), which
// moves it there at once, then allows every CPU again: it is not pinned, the
// scheduler may move it later like any thread.
int current_cpu() {
#if defined(__linux__)
  return sched_getcpu();
#else
  return -1;
#endif
}

// At most one move per worker in this long: where the CPUs are oversubscribed
// (more runnable threads than CPUs) sharing one is the scheduler's fair
// choice, and moving on every job would only add system calls.
constexpr auto kMoveInterval = std::chrono::milliseconds(20);

// Workers poll, then sleep, until a new job is published, then take chunks
// (as the caller does) until none is left.
class Pool {
 public:
  static Pool& instance() {
    static Pool* pool = new Pool;  // never destroyed: workers may outlive static destructors
    return *pool;
  }

  void run(int64_t n, int64_t chunks, const std::function<void(int64_t, int64_t)>& body) {
    std::lock_guard<std::mutex> one_job(job_mutex_);  // one parallel job at a time
    ensure_workers(static_cast<int>(chunks) - 1);
    const int caller_cpu = current_cpu();
    std::unique_lock<std::mutex> lock(mutex_);
    caller_cpu_ = caller_cpu;
    body_ = &body;
    n_ = n;
    chunks_ = chunks;
    next_chunk_ = 0;
    pending_.store(chunks, std::memory_order_relaxed);
    job_.fetch_add(1, std::memory_order_release);  // polling workers see it
    if (sleeping_ > 0) wake_.notify_all();
    // The caller takes chunks too: on a busy machine a worker may be slow to
    // wake, and then the caller does its share instead of waiting for it.
    drain(lock);
    if (pending_.load(std::memory_order_acquire) != 0) {
      lock.unlock();
      poll_for([&] { return pending_.load(std::memory_order_acquire) == 0; });
      lock.lock();
      done_.wait(lock, [&] { return pending_.load(std::memory_order_relaxed) == 0; });
    }
    body_ = nullptr;
  }

 private:
  // Take and run chunks of the current job until none is left (lock held on
  // entry and exit, released while a chunk runs).
  void drain(std::unique_lock<std::mutex>& lock) {
    while (next_chunk_ < chunks_) {
      const int64_t c = next_chunk_++;
      lock.unlock();
      const int64_t begin = n_ * c / chunks_, end = n_ * (c + 1) / chunks_;
      if (begin < end) (*body_)(begin, end);
      lock.lock();
      if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) done_.notify_one();
    }
  }

  // A thread the system refuses (RLIMIT_NPROC, no memory for its stack) is
  // CH_ERR_OUT_OF_MEMORY; the workers started so far stay.
  void ensure_workers(int wanted) {
    const int creator_cpu = current_cpu();
    for (; workers_ < wanted; ++workers_) {
      try {
        std::thread([this, creator_cpu, nth = workers_] { work(creator_cpu, nth); }).detach();
      } catch (const std::system_error& e) {
        fail(CH_ERR_OUT_OF_MEMORY, "cannot start worker thread ", workers_ + 1, " of ", wanted,
             " (", e.what(), "); fewer threads (ch_config_set_num_threads) need fewer");
      }
    }
  }

  void work(int creator_cpu, int nth) {
    detail::move_off_cpu(creator_cpu, nth);
    std::chrono::steady_clock::time_point last_move{};  // the start's move does not count
    in_parallel_region = true;
    uint64_t seen = 0;  // the last job this worker took part in
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      if (job_.load(std::memory_order_relaxed) == seen) {
        lock.unlock();
        poll_for([&] { return job_.load(std::memory_order_acquire) != seen; });
        lock.lock();
        ++sleeping_;
        wake_.wait(lock, [&] { return job_.load(std::memory_order_relaxed) != seen; });
        --sleeping_;
      }
      seen = job_.load(std::memory_order_relaxed);
      if (caller_cpu_ >= 0 && current_cpu() == caller_cpu_) {
        const auto now = std::chrono::steady_clock::now();
        if (now - last_move >= kMoveInterval) {
          last_move = now;
          const int busy = caller_cpu_;
          lock.unlock();
          detail::move_off_cpu(busy, nth);
          lock.lock();
        }
      }
      drain(lock);
    }
  }

  std::mutex job_mutex_, mutex_;
  std::condition_variable wake_, done_;
  int workers_ = 0;   // detached threads, alive for the life of the process
  int sleeping_ = 0;  // workers blocked on wake_ (guarded by mutex_)
  // The job: written under mutex_, published by incrementing job_.
  std::atomic<uint64_t> job_{0};
  const std::function<void(int64_t, int64_t)>* body_ = nullptr;
  int64_t n_ = 0, chunks_ = 0, next_chunk_ = 0;
  int caller_cpu_ = -1;              // where the job's caller ran when it published it
  std::atomic<int64_t> pending_{0};  // chunks not yet finished
};

}  // namespace

int num_threads() {
  int n = g_threads.load(std::memory_order_relaxed);
  if (n == 0) {
    n = default_threads();
    set_num_threads(n);
  }
  return n;
}

void set_num_threads(int n) {
  n = std::max(1, n);
  g_threads.store(n, std::memory_order_relaxed);
  set_blas_threads(n);
}

bool in_parallel_region_now() { return in_parallel_region; }

namespace detail {
void move_off_cpu(int busy_cpu, int nth) {
#if defined(__linux__)
  cpu_set_t allowed;
  if (busy_cpu < 0 || sched_getaffinity(0, sizeof allowed, &allowed) != 0) return;
  std::vector<int> others;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (c != busy_cpu && CPU_ISSET(c, &allowed)) others.push_back(c);
  if (others.empty()) return;
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(others[static_cast<size_t>(nth) % others.size()], &one);
  if (sched_setaffinity(0, sizeof one, &one) == 0) sched_setaffinity(0, sizeof allowed, &allowed);
#else
  (void)busy_cpu;
  (void)nth;
#endif
}

void parallel_run(int64_t n, int64_t chunks, const std::function<void(int64_t, int64_t)>& body) {
  if (in_parallel_region) {
    body(0, n);
    return;
  }
  // Reset however run() ends: a failure (no thread to start) must not leave
  // this thread marked as inside a region, which would run every later
  // parallel_for inline.
  struct Region {
    Region() { in_parallel_region = true; }
    ~Region() { in_parallel_region = false; }
  } region;
  Pool::instance().run(n, chunks, body);
}
}  // namespace detail

}  // namespace chainerc::cpu
