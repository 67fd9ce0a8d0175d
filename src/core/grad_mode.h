// Whether applying a function records a graph node (Chainer's
// config.enable_backprop): a process-wide switch and, over it, a per-thread
// stack of scopes (Chainer's no_backprop_mode / force_backprop_mode). The
// engine forces recording on while a double-backprop pass builds gradients
// as graphs, and off while a pass that was not asked for one runs graph
// backwards.
#pragma once

namespace chainerc {

void set_backprop_enabled_globally(bool enabled) noexcept;
bool backprop_enabled_globally() noexcept;
// The effective mode on this thread: the innermost scope, else the global switch.
bool backprop_enabled() noexcept;

// Open / close a scope on this thread (the C API's ch_backprop_mode_push/pop).
// pop_backprop_mode returns false when no scope is open.
void push_backprop_mode(bool enabled);
bool pop_backprop_mode() noexcept;

// RAII scope for code inside the library.
class BackpropModeScope {
 public:
  explicit BackpropModeScope(bool enabled) { push_backprop_mode(enabled); }
  ~BackpropModeScope() { pop_backprop_mode(); }
  BackpropModeScope(const BackpropModeScope&) = delete;
  BackpropModeScope& operator=(const BackpropModeScope&) = delete;
};

}  // namespace chainerc
