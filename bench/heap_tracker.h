// Heap bytes held through malloc and friends in this process (see
// heap_tracker.cpp), for the peak-memory columns of bench/train.
#pragma once

#include <cstdint>

namespace bench {

int64_t heap_in_use();
// Starts a new peak at the current figure, which it returns.
int64_t heap_reset_peak();
int64_t heap_peak();
// A second peak for attributing the first to the phases of a step (bench/train
// --heap-phases): reset at each phase's start without disturbing heap_peak.
int64_t heap_reset_phase_peak();
int64_t heap_phase_peak();

}  // namespace bench
