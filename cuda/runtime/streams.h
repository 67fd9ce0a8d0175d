// The streams of the CUDA backend (issue 46): each device has one engine
// stream, created non-blocking (cudaStreamNonBlocking), on which every kernel,
// copy, fill, cuBLAS/cuRAND/cuDNN call of chainerc's runs, and one copy
// stream for uploads that overlap the engine's work. Neither synchronises with
// CUDA's legacy default stream, so a step can run ahead of the GPU, other
// libraries' legacy-stream work does not serialise with it, and a step can be
// captured into a CUDA graph (capture cannot run on the legacy stream).
//
// Engine code passes nullptr where a stream is asked for: it means "the
// engine stream of the current device". launch() (launch.h) resolves it, and
// so does the nullptr overload of cudaMemsetAsync below, so the op files name
// no stream at all. Plain C++: included by nvcc's and the host compiler's code.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace chainerc::cuda {

// The engine stream of `device` (created on first use, never destroyed).
// Borrowed; valid for the life of the process. Throws Error(CH_ERR_DEVICE).
cudaStream_t engine_stream(int32_t device);
// The engine stream of the calling thread's current device.
cudaStream_t current_engine_stream();
// `stream`, or the current device's engine stream when it is null.
inline cudaStream_t resolve_stream(cudaStream_t stream) {
  return stream ? stream : current_engine_stream();
}
// The upload stream of `device` (host-to-device copies of fresh arrays).
cudaStream_t copy_stream(int32_t device);

// Work queued on `waiter` after this starts after everything queued on
// `after` so far (an event recorded on `after`; no host synchronisation).
void order_after(cudaStream_t waiter, cudaStream_t after, int32_t after_device, const char* who);

}  // namespace chainerc::cuda

// cudaMemsetAsync(ptr, value, n, nullptr) in engine code: on the engine stream
// of the current device (an exact match for a literal nullptr, so it is chosen
// over the runtime's cudaStream_t overload; an explicit stream goes there).
inline cudaError_t cudaMemsetAsync(void* ptr, int value, size_t count, decltype(nullptr)) {
  return cudaMemsetAsync(ptr, value, count, chainerc::cuda::current_engine_stream());
}
