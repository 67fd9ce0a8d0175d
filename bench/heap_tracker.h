// Heap bytes held through malloc and friends in this process (see
// heap_tracker.cpp), for the peak-memory columns of bench/train.
#pragma once

#include <cstdint>

namespace bench {

int64_t heap_in_use();
// Starts a new peak at the current figure, which it returns.
int64_t heap_reset_peak();
int64_t heap_peak();

}  // namespace bench
