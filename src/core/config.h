// Process-wide settings behind include/ch/config.h.
#pragma once

#include <cstdint>

namespace chainerc::config {

bool train_default();
void set_train_default(bool train);
// Resolve a `train` argument of the C API: CH_MODE_DEFAULT (-1) means the
// process default; 0 is test, anything else train.
bool resolve_train(int32_t train);

}  // namespace chainerc::config
