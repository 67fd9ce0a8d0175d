// CUDA graph capture of the engine's work (issue 46): one device's engine
// stream is captured between begin_capture and end_capture (cudaStreamBegin-
// Capture, thread-local mode), with the device's allocator in a private pool
// and its device-side checks in slots of the graph's own; the graph is then
// replayed with one cudaGraphLaunch. The backend's synchronising calls ask
// refuse_in_capture first, so that a host synchronisation during capture is a
// clear error (and the capture is invalidated) rather than a CUDA failure.
#pragma once

#include <cstdint>
#include <memory>

#include "core/device_backend.h"

namespace chainerc::cuda {

// Whether `device`'s engine stream is being captured.
bool capturing(int32_t device);
// Throws Error(CH_ERR_UNSUPPORTED) "who: <what> during CUDA graph capture on
// cuda:N ..." when `device` is being captured, and invalidates the capture.
void refuse_in_capture(int32_t device, const char* who, const char* what);

// Begins capturing `device`'s engine stream; Error when it is captured already.
void begin_capture(int32_t device);
// Ends the capture; the graph, or Error naming why the capture failed.
std::shared_ptr<DeviceGraph> end_capture(int32_t device);

}  // namespace chainerc::cuda
