// Test helper: sets the CPU kernels' thread count for a scope and restores it.
#pragma once

#include "backend/cpu/parallel.h"

namespace chainerc::test_util {

class ThreadCount {
 public:
  explicit ThreadCount(int n) : saved_(cpu::num_threads()) { cpu::set_num_threads(n); }
  ~ThreadCount() { cpu::set_num_threads(saved_); }
  ThreadCount(const ThreadCount&) = delete;
  ThreadCount& operator=(const ThreadCount&) = delete;

 private:
  int saved_;
};

}  // namespace chainerc::test_util
