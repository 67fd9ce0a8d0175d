// Emulated CUDA runtime API (-Dcuda-emulation=true): the subset chainerc's
// CUDA backend calls, with the real runtime's names, error codes and
// semantics, over host memory. Two devices, cuda:0 and cuda:1; streams are
// in-order queues whose work runs synchronously when queued; the last error
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
  cudaErrorNotReady = 600,
  cudaErrorIllegalAddress = 700,
  cudaErrorLaunchOutOfResources = 701,
  cudaErrorLaunchFailure = 719,
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
typedef struct CUstream_st* cudaStream_t;
typedef struct CUevent_st* cudaEvent_t;

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
cudaError_t cudaEventDestroy(cudaEvent_t event);

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
}  // namespace chainerc::cuda::emu
