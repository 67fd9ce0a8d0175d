#include "parallel.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <thread>

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

// Workers sleep until a job has chunks left, then take chunks (as the caller
// does) until none is left.
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
    pending_ = chunks;
    wake_.notify_all();
    // The caller takes chunks too: on a busy machine a worker may be slow to
    // wake, and then the caller does its share instead of waiting for it.
    drain(lock);
    done_.wait(lock, [&] { return pending_ == 0; });
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
      if (--pending_ == 0) done_.notify_one();
    }
  }

  void ensure_workers(int wanted) {
    for (; workers_ < wanted; ++workers_) std::thread([this] { work(); }).detach();
  }

  void work() {
    in_parallel_region = true;
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      wake_.wait(lock, [&] { return next_chunk_ < chunks_; });
      drain(lock);
    }
  }

  std::mutex job_mutex_, mutex_;
  std::condition_variable wake_, done_;
  int workers_ = 0;  // detached threads, alive for the life of the process
  const std::function<void(int64_t, int64_t)>* body_ = nullptr;
  int64_t n_ = 0, chunks_ = 0, next_chunk_ = 0, pending_ = 0;
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
