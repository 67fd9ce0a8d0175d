// Emulated CUDA runtime API (-Dcuda-emulation=true): the subset chainerc's
// CUDA backend calls, with the real runtime's names, error codes and
// semantics, over host memory. Two devices, cuda:0 and cuda:1; streams are
// in-order queues whose work runs when queued unless it must wait (for an
// event of another stream, or a stream a test holds: runtime.cpp), with
// events, graph capture and replay; the last error
// is per thread and cleared by cudaGetLastError, as in the real runtime.
// Implemented in cuda/emulation/runtime.cpp. Never part of a release build.
#pragma once

#include <cstddef>
#include <cstdint>

#define CH_CUDA_EMULATED_RUNTIME 1

enum cudaError {
  cudaSuccess = 0,
  cudaErrorInvalidValue = 1,
  cudaErrorMemoryAllocation = 2,
  cudaErrorInitializationError = 3,
  cudaErrorInvalidConfiguration = 9,
  cudaErrorInvalidDevicePointer = 17,
  cudaErrorInvalidMemcpyDirection = 21,
  cudaErrorNoDevice = 100,
  cudaErrorInvalidDevice = 101,
  cudaErrorInvalidResourceHandle = 400,
  cudaErrorIllegalState = 401,
  cudaErrorNotReady = 600,
  cudaErrorIllegalAddress = 700,
  cudaErrorLaunchOutOfResources = 701,
  cudaErrorLaunchFailure = 719,
  cudaErrorStreamCaptureUnsupported = 900,
  cudaErrorStreamCaptureInvalidated = 901,
  cudaErrorStreamCaptureIsolation = 905,
  cudaErrorStreamCaptureImplicit = 906,
  cudaErrorStreamCaptureWrongThread = 908,
};
typedef enum cudaError cudaError_t;

enum cudaMemcpyKind {
  cudaMemcpyHostToHost = 0,
  cudaMemcpyHostToDevice = 1,
  cudaMemcpyDeviceToHost = 2,
  cudaMemcpyDeviceToDevice = 3,
  cudaMemcpyDefault = 4,
};

enum cudaDeviceAttr {
  cudaDevAttrMaxThreadsPerBlock = 1,
  cudaDevAttrMaxSharedMemoryPerBlock = 8,
  cudaDevAttrWarpSize = 10,
  cudaDevAttrMultiProcessorCount = 16,
  cudaDevAttrComputeCapabilityMajor = 75,
  cudaDevAttrComputeCapabilityMinor = 76,
  cudaDevAttrMaxSharedMemoryPerBlockOptin = 97,
};

// The kernel attributes chainerc sets (cudaFuncSetAttribute).
enum cudaFuncAttribute {
  cudaFuncAttributeMaxDynamicSharedMemorySize = 8,
};

#define cudaStreamDefault 0x00
#define cudaStreamNonBlocking 0x01
#define cudaEventDefault 0x00
#define cudaEventDisableTiming 0x02
#define cudaHostAllocDefault 0x00
#define cudaHostAllocPortable 0x01

struct CUstream_st;
struct CUevent_st;
struct CUgraph_st;
struct CUgraphExec_st;
typedef struct CUstream_st* cudaStream_t;
typedef struct CUevent_st* cudaEvent_t;
typedef struct CUgraph_st* cudaGraph_t;
typedef struct CUgraphExec_st* cudaGraphExec_t;

enum cudaStreamCaptureMode {
  cudaStreamCaptureModeGlobal = 0,
  cudaStreamCaptureModeThreadLocal = 1,
  cudaStreamCaptureModeRelaxed = 2,
};
enum cudaStreamCaptureStatus {
  cudaStreamCaptureStatusNone = 0,
  cudaStreamCaptureStatusActive = 1,
  cudaStreamCaptureStatusInvalidated = 2,
};

struct uint3 {
  unsigned int x, y, z;
};
struct dim3 {
  unsigned int x, y, z;
  constexpr dim3(unsigned int vx = 1, unsigned int vy = 1, unsigned int vz = 1)
      : x(vx), y(vy), z(vz) {}
  constexpr dim3(uint3 v) : x(v.x), y(v.y), z(v.z) {}
  constexpr operator uint3() const { return uint3{x, y, z}; }
};

const char* cudaGetErrorName(cudaError_t error);
const char* cudaGetErrorString(cudaError_t error);
cudaError_t cudaGetLastError(void);
cudaError_t cudaPeekAtLastError(void);

cudaError_t cudaGetDeviceCount(int* count);
cudaError_t cudaGetDevice(int* device);
cudaError_t cudaSetDevice(int device);
cudaError_t cudaDeviceGetAttribute(int* value, enum cudaDeviceAttr attr, int device);
// As on a GPU, a kernel may launch with more than 48 KiB of dynamic shared
// memory only up to what this set for it (at most the opt-in 227 KiB).
cudaError_t cudaFuncSetAttribute(const void* func, enum cudaFuncAttribute attr, int value);
cudaError_t cudaDeviceSynchronize(void);

cudaError_t cudaMalloc(void** ptr, size_t size);
cudaError_t cudaFree(void* ptr);
cudaError_t cudaHostAlloc(void** ptr, size_t size, unsigned int flags);
cudaError_t cudaFreeHost(void* ptr);
cudaError_t cudaMemcpy(void* dst, const void* src, size_t count, enum cudaMemcpyKind kind);
cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t count, enum cudaMemcpyKind kind,
                            cudaStream_t stream);
cudaError_t cudaMemcpyPeer(void* dst, int dstDevice, const void* src, int srcDevice, size_t count);
cudaError_t cudaMemcpyPeerAsync(void* dst, int dstDevice, const void* src, int srcDevice,
                                size_t count, cudaStream_t stream);
cudaError_t cudaMemsetAsync(void* ptr, int value, size_t count, cudaStream_t stream);

cudaError_t cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned int flags);
cudaError_t cudaStreamSynchronize(cudaStream_t stream);
cudaError_t cudaStreamDestroy(cudaStream_t stream);
cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int flags);
cudaError_t cudaEventCreateWithFlags(cudaEvent_t* event, unsigned int flags);
cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream);
cudaError_t cudaEventSynchronize(cudaEvent_t event);
cudaError_t cudaEventQuery(cudaEvent_t event);
cudaError_t cudaEventDestroy(cudaEvent_t event);

// Graphs: work queued on a stream between cudaStreamBeginCapture and
// cudaStreamEndCapture is recorded, not run; cudaGraphLaunch queues it again.
// During a capture (not cudaStreamCaptureModeRelaxed) the capturing thread's
// cudaMalloc, cudaFree, cudaHostAlloc, synchronisations and pageable copies
// are refused and invalidate it, as on a GPU; so is work on the legacy
// stream (stricter than a GPU, which would run it outside the graph).
cudaError_t cudaStreamBeginCapture(cudaStream_t stream, enum cudaStreamCaptureMode mode);
cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t* graph);
cudaError_t cudaStreamIsCapturing(cudaStream_t stream, enum cudaStreamCaptureStatus* status);
cudaError_t cudaThreadExchangeStreamCaptureMode(enum cudaStreamCaptureMode* mode);
cudaError_t cudaGraphInstantiate(cudaGraphExec_t* exec, cudaGraph_t graph,
                                 unsigned long long flags);
cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t stream);
cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec);
cudaError_t cudaGraphDestroy(cudaGraph_t graph);

// Emulator-only queries (not CUDA API), for the emulator's tests.
namespace chainerc::cuda::emu {
// Calls so far, on any device and thread, that make the host wait for a
// device on a GPU: cudaMemcpy, cudaMemcpyPeer, cudaDeviceSynchronize,
// cudaStreamSynchronize, cudaEventSynchronize (not the Async copies).
uint64_t host_synchronizations();
// Whether a context (primary context) was ever created on `device`: by
// cudaSetDevice (CUDA 12 semantics) or by work on it as the current device.
bool context_created(int device);
// The device whose memory `ptr` points into (-1: not device memory); the
// allocation's bytes from ptr to its end in *bytes_left.
int device_of(const void* ptr, size_t* bytes_left);
// Device bytes held through cudaMalloc on `device`.
size_t bytes_allocated(int device);
// The detailed message of the calling thread's last failed launch.
const char* last_launch_message();
// Records the first in-kernel error (divergent barrier, trap) for the launch.
void set_last_error(cudaError_t e);
// Hold a stream (true): its later work waits, as on a GPU that has not got
// to it yet, until released (false) or a synchronisation waits for it.
void hold_stream(cudaStream_t stream, bool held);
// Work items queued on `stream` and not yet run.
size_t stream_pending(cudaStream_t stream);
// cudaGraphLaunch calls so far, and the recorded items they have run.
uint64_t graph_launches();
uint64_t graph_work_replayed();
}  // namespace chainerc::cuda::emu
