#include "config.h"

#include <atomic>

namespace chainerc::config {
namespace {
std::atomic<bool> g_train{true};
std::atomic<bool> g_use_cudnn{true};
std::atomic<bool> g_allow_tf32{false};
std::atomic<bool> g_deterministic{false};
}  // namespace

bool train_default() { return g_train.load(std::memory_order_relaxed); }
void set_train_default(bool train) { g_train.store(train, std::memory_order_relaxed); }
bool resolve_train(int32_t train) { return train < 0 ? train_default() : train != 0; }

bool use_cudnn() { return g_use_cudnn.load(std::memory_order_relaxed); }
void set_use_cudnn(bool on) { g_use_cudnn.store(on, std::memory_order_relaxed); }
bool allow_tf32() { return g_allow_tf32.load(std::memory_order_relaxed); }
void set_allow_tf32(bool on) { g_allow_tf32.store(on, std::memory_order_relaxed); }
bool deterministic() { return g_deterministic.load(std::memory_order_relaxed); }
void set_deterministic(bool on) { g_deterministic.store(on, std::memory_order_relaxed); }

}  // namespace chainerc::config
