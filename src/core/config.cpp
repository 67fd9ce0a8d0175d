#include "config.h"

#include <atomic>

namespace chainerc::config {
namespace {
std::atomic<bool> g_train{true};
}

bool train_default() { return g_train.load(std::memory_order_relaxed); }
void set_train_default(bool train) { g_train.store(train, std::memory_order_relaxed); }
bool resolve_train(int32_t train) { return train < 0 ? train_default() : train != 0; }

}  // namespace chainerc::config
