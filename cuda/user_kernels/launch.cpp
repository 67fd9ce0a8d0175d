// Loading and launching user kernels with the CUDA runtime's library API
// (cudaLibraryLoadData / cudaLibraryGetKernel / cudaLaunchKernel, CUDA 12+):
// no link against the driver library, so chainerc loads on machines without
// one. Loaded modules are cached per (device, source).
#include <cuda_runtime_api.h>

#include <map>
#include <mutex>
#include <string>
#include <utility>

#include "../runtime/cuda_util.h"
#include "core/error.h"
#include "disk_cache.h"
#include "nvrtc_compiler.h"
#include "user_kernels/gpu.h"

namespace chainerc::kernels::gpu {
namespace {

void check_cuda(cudaError_t e, const char* what, const std::string& name, int device) {
  if (e == cudaSuccess) return;
  // Clear the runtime's last error: a failed launch would otherwise make the
  // next good launch on this thread fail (its cudaGetLastError check).
  cudaGetLastError();
  fail(e == cudaErrorMemoryAllocation ? CH_ERR_OUT_OF_MEMORY : CH_ERR_DEVICE, "kernel '", name,
       "' on cuda:", device, ": ", what, " failed: ", cudaGetErrorName(e), " (",
       cudaGetErrorString(e), ")");
}

std::string arch_of(int device, const std::string& name) {
  int major = 0, minor = 0;
  check_cuda(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device),
             "cudaDeviceGetAttribute", name, device);
  check_cuda(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device),
             "cudaDeviceGetAttribute", name, device);
  return "sm_" + std::to_string(major * 10 + minor);
}

struct Loaded {
  cudaLibrary_t library = nullptr;
  cudaKernel_t kernel = nullptr;
};

struct ModuleCache {
  std::mutex mutex;
  // (device, hash of source + name) -> module; the source is kept to rule out collisions.
  std::map<std::pair<int, uint64_t>, std::pair<std::string, Loaded>> entries;
};

ModuleCache& modules() {
  static ModuleCache* c = new ModuleCache();  // leaked: no unload during process teardown
  return *c;
}

Loaded load(int device, const std::string& source, const std::string& name) {
  const std::string id = name + "\n" + source;
  const auto key = std::make_pair(device, disk_cache::hash64(id));
  ModuleCache& c = modules();
  {
    std::lock_guard<std::mutex> lock(c.mutex);
    auto it = c.entries.find(key);
    if (it != c.entries.end() && it->second.first == id) return it->second.second;
  }
  // Compile outside the lock (NVRTC is thread-safe); a race loads twice, harmlessly.
  const nvrtc::Result bin = nvrtc::compile(source, name, arch_of(device, name));
  Loaded l;
  check_cuda(
      cudaLibraryLoadData(&l.library, bin.binary.data(), nullptr, nullptr, 0, nullptr, nullptr, 0),
      "cudaLibraryLoadData", name, device);
  cudaError_t e = cudaLibraryGetKernel(&l.kernel, l.library, name.c_str());
  if (e != cudaSuccess) {
    cudaLibraryUnload(l.library);
    check_cuda(e, "cudaLibraryGetKernel", name, device);
  }
  std::lock_guard<std::mutex> lock(c.mutex);
  auto it = c.entries.find(key);
  if (it != c.entries.end() && it->second.first == id) {
    cudaLibraryUnload(l.library);
    return it->second.second;
  }
  c.entries[key] = std::make_pair(id, l);
  return l;
}

}  // namespace

bool built() { return true; }

int multiprocessor_count(int device) {
  int n = 0;
  if (cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, device) != cudaSuccess || n <= 0)
    return 1;
  return n;
}

void launch(int device, const std::string& source, const std::string& kernel_name, long long count,
            const void* args, size_t args_size, unsigned grid, unsigned block, void* stream) {
  (void)args_size;
  // The device must exist; it is current for the launch (cuda::DeviceGuard
  // leaves no context on the previous device where it had none).
  cuda::require_device(device, ("kernel '" + kernel_name + "'").c_str());
  cuda::DeviceGuard scope(device);
  const Loaded l = load(device, source, kernel_name);
  long long n = count;
  void* params[2] = {&n, const_cast<void*>(args)};
  check_cuda(cudaLaunchKernel(reinterpret_cast<const void*>(l.kernel), dim3(grid), dim3(block),
                              params, 0, static_cast<cudaStream_t>(stream)),
             "cudaLaunchKernel", kernel_name, device);
  check_cuda(cudaGetLastError(), "launch", kernel_name, device);
}

}  // namespace chainerc::kernels::gpu
