// Checks found on the device, reported at the next point that synchronises
// anyway (issue 46): a label or id check launches its kernel, which records
// the first bad index in a slot of the device's error words, and returns
// without waiting; the host reads the words only where it waits for the
// device in any case (a copy to the host, ch_cuda_synchronize, a stream's
// synchronisation) and throws the first check's error there, with the
// message the op would have given at once. So a training step's checks cost
// no host synchronisation, and a step can run ahead of the GPU (and be
// captured in a CUDA graph).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace chainerc::cuda {

// Builds the error message for the first bad flat index the kernel recorded
// and the value found there.
using DescribeBadIndex = std::function<std::string(int64_t index, int64_t value)>;

// Two device words for one check on `device`'s default stream: [0] all ones
// until the check kernel records an index (atomicMin), [1] the value at that
// index, written by a second kernel (so that nothing the check read need be
// kept alive until the report). `describe` is called when the check is
// reported; it must not hold device memory (it outlives the step).
unsigned long long* deferred_check_slot(int32_t device, DescribeBadIndex describe);

// At a point that has synchronised with `device` (or is about to): reads the
// pending checks' words (one small copy, nothing when none is pending),
// clears them, and throws Error(CH_ERR_INVALID_ARGUMENT) with the message of
// the first check, in launch order, that recorded an index.
void report_deferred_checks(int32_t device);

// Checks launched on `device` and not yet read (tests).
int64_t pending_deferred_checks(int32_t device);

// CUDA graph capture (graph.h): between begin_capture_checks and
// end_capture_checks, each check takes a slot of the graph's own (kept from
// other checks until the graph's CapturedChecks is destroyed); each replay
// makes those slots pending again (replayed_checks), so a bad label in a
// replayed step is reported at the next synchronisation as in an eager one.
struct CapturedChecks;
void begin_capture_checks(int32_t device);
std::shared_ptr<CapturedChecks> end_capture_checks(int32_t device);
void replayed_checks(const CapturedChecks& checks);

}  // namespace chainerc::cuda
