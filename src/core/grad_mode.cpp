#include "grad_mode.h"

#include <atomic>
#include <vector>

namespace chainerc {
namespace {
std::atomic<bool> g_enabled{true};
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
  return t_mode >= 0 ? t_mode != 0 : g_enabled.load(std::memory_order_relaxed);
}

void push_backprop_mode(bool enabled) {
  thread_local std::vector<int> saved;
  t_saved = &saved;
  saved.push_back(t_mode);
  t_mode = enabled ? 1 : 0;
}

bool pop_backprop_mode() noexcept {
  if (!t_saved || t_saved->empty()) return false;
  t_mode = t_saved->back();
  t_saved->pop_back();
  return true;
}

}  // namespace chainerc
