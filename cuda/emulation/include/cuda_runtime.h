// Emulated <cuda_runtime.h>: the runtime API plus the device-side language
// (cuda/emulation/cuda_emulation.h), as nvcc includes it in every .cu file.
#pragma once

#include "../cuda_emulation.h"
#include "cuda_runtime_api.h"
