// Helpers shared by the CUDA backend: error checks that become chainerc
// errors, and a guard that makes a device current for a scope.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>

#include "core/error.h"

namespace chainerc::cuda {

// "cudaErrorNoDevice: no CUDA-capable device is detected"
inline std::string error_text(cudaError_t e) {
  return std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e);
}

// Throws Error naming `who` and the CUDA call unless `e` is cudaSuccess.
// Out-of-memory errors become CH_ERR_OUT_OF_MEMORY, others CH_ERR_DEVICE.
inline void check(cudaError_t e, const char* who, const char* call) {
  if (e == cudaSuccess) return;
  cudaGetLastError();  // clear a non-sticky error so later calls are not blamed
  fail(e == cudaErrorMemoryAllocation ? CH_ERR_OUT_OF_MEMORY : CH_ERR_DEVICE, who, ": ", call,
       " failed: ", error_text(e));
}

// Whether `device` has an active primary context (the driver's
// cuDevicePrimaryCtxGetState, reached through the runtime; the emulator's
// record under -Dcuda-emulation=true). True when that cannot be asked.
bool context_active(int32_t device);

// Releases (cudaFree, cudaFreeHost, cudaStreamDestroy) cannot throw: a failure
// is cleared from the runtime's last error, so the next call is not blamed for
// it, and reported on stderr (the first few).
void release_failed(cudaError_t e, const char* call);

// Makes `device` current for the scope; restores the previous one.
class DeviceGuard {
 public:
  explicit DeviceGuard(int32_t device) {
    check(cudaGetDevice(&previous_), "CUDA", "cudaGetDevice");
    if (previous_ != device) check(cudaSetDevice(device), "CUDA", "cudaSetDevice");
  }
  // Restores the previous device only where it has a context: a thread that
  // never used cuda:0 (cudaGetDevice's default) is not given a context there
  // (cudaSetDevice creates one since CUDA 12), so a process that uses only
  // cuda:1 leaves cuda:0 alone; such a thread stays on the guard's device.
  ~DeviceGuard() {
    int now = previous_;
    if (cudaGetDevice(&now) == cudaSuccess && now != previous_ && context_active(previous_))
      cudaSetDevice(previous_);
  }
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = 0;
};

// Devices visible to the process (0 when there is no driver or GPU).
int32_t device_count();
// The runtime's error when device_count() is 0, else "".
std::string unavailable_reason();
// Throws Error(CH_ERR_DEVICE) "no CUDA device: ..." unless `index` exists.
void require_device(int32_t index, const char* who);

}  // namespace chainerc::cuda
