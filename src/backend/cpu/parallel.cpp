#include "parallel.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <vector>

#if defined(__linux__)
#include <sched.h>
#endif

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
// idle process uses no CPU. 1 ms: the small MLP's step (784-100-100-10,
// batch 100) on two threads has serial stretches of 100-150 us between its
// parallel GEMMs, which a 100 us poll slept through: one epoch of bench/train
// took 0.237 s with 100 us and 0.201 s with 1 ms (medians of 5 interleaved
// runs, 2-core Zen 4 VM; the one-thread run and the convnet unchanged).
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
// it to an idle one only after several milliseconds (6-16 ms measured on the
// 2-core Zen 4 VM, both threads busy): until then a two-thread job runs at
// the one-thread rate, and the GEMM choice, made on the first calls of a
// process, judges splitting C by it. So a worker starts by asking for one
// CPU other than its creator's (the `nth` of the others the process may use),
// which moves it there at once, then allows every CPU again: it is not pinned,
// the scheduler may move it later like any thread.
void start_on_other_cpu(int creator_cpu, int nth) {
#if defined(__linux__)
  cpu_set_t allowed;
  if (creator_cpu < 0 || sched_getaffinity(0, sizeof allowed, &allowed) != 0) return;
  std::vector<int> others;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (c != creator_cpu && CPU_ISSET(c, &allowed)) others.push_back(c);
  if (others.empty()) return;
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(others[static_cast<size_t>(nth) % others.size()], &one);
  if (sched_setaffinity(0, sizeof one, &one) == 0) sched_setaffinity(0, sizeof allowed, &allowed);
#else
  (void)creator_cpu;
  (void)nth;
#endif
}

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
    std::unique_lock<std::mutex> lock(mutex_);
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

  void ensure_workers(int wanted) {
#if defined(__linux__)
    const int creator_cpu = sched_getcpu();
#else
    const int creator_cpu = -1;
#endif
    for (; workers_ < wanted; ++workers_)
      std::thread([this, creator_cpu, nth = workers_] { work(creator_cpu, nth); }).detach();
  }

  void work(int creator_cpu, int nth) {
    start_on_other_cpu(creator_cpu, nth);
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
void parallel_run(int64_t n, int64_t chunks, const std::function<void(int64_t, int64_t)>& body) {
  if (in_parallel_region) {
    body(0, n);
    return;
  }
  in_parallel_region = true;
  Pool::instance().run(n, chunks, body);
  in_parallel_region = false;
}
}  // namespace detail

}  // namespace chainerc::cpu
