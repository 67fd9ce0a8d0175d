#include "grad_mode.h"

#include <atomic>
#include <vector>

namespace chainerc {
namespace {
std::atomic<bool> g_enabled{true};
// Scopes open on all threads together. While none is, every thread's mode is
// the global switch, and backprop_enabled (once per function applied) skips
// the thread-local read, which from a shared library is a call into the
// dynamic loader. A thread sees its own increment before its own t_mode
// write (program order), so a thread with a scope open never skips it.
std::atomic<long> g_open_scopes{0};
// -1: no scope open on this thread (a plain int so that reading it costs no
// thread-local constructor check on the forward path).
thread_local int t_mode = -1;
thread_local std::vector<int>* t_saved = nullptr;  // outer scopes' modes
}  // namespace

void set_backprop_enabled_globally(bool enabled) noexcept {
  g_enabled.store(enabled, std::memory_order_relaxed);
}
bool backprop_enabled_globally() noexcept { return g_enabled.load(std::memory_order_relaxed); }

bool backprop_enabled() noexcept {
  if (g_open_scopes.load(std::memory_order_relaxed) == 0)
    return g_enabled.load(std::memory_order_relaxed);
  return t_mode >= 0 ? t_mode != 0 : g_enabled.load(std::memory_order_relaxed);
}

void push_backprop_mode(bool enabled) {
  thread_local std::vector<int> saved;
  t_saved = &saved;
  saved.push_back(t_mode);
  g_open_scopes.fetch_add(1, std::memory_order_relaxed);
  t_mode = enabled ? 1 : 0;
}

bool pop_backprop_mode() noexcept {
  if (!t_saved || t_saved->empty()) return false;
  t_mode = t_saved->back();
  t_saved->pop_back();
  g_open_scopes.fetch_sub(1, std::memory_order_relaxed);
  return true;
}

}  // namespace chainerc
