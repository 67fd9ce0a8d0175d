// Emulated <cuda_runtime.h>: the runtime API plus the device-side language
// (cuda/emulation/cuda_emulation.h), as nvcc includes it in every .cu file.
#pragma once

#include "../cuda_emulation.h"
#include "cuda_runtime_api.h"

// The runtime's overload for a kernel itself (not a const void*).
template <typename T>
cudaError_t cudaFuncSetAttribute(T* entry, enum cudaFuncAttribute attr, int value) {
  return cudaFuncSetAttribute(reinterpret_cast<const void*>(entry), attr, value);
}
