#include <atomic>
#include <cstdio>
#include <mutex>

#include "core/config.h"
#include "cuda_util.h"

namespace chainerc::cuda {
namespace {

struct Probe {
  int32_t count = 0;
  std::string reason;
};

// Asked once: cudart (linked statically) loads the driver here; without one
// the count is 0 and the runtime's error is kept for messages.
const Probe& probe() {
  static const Probe* p = [] {
    auto* r = new Probe;  // never destroyed: usable from static destructors
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
      cudaGetLastError();
      r->reason = error_text(e);
      n = 0;
    } else if (n == 0) {
      r->reason = "the CUDA runtime reports 0 devices";
    }
    r->count = n;
    return r;
  }();
  return *p;
}

}  // namespace

int32_t device_count() { return probe().count; }

std::string unavailable_reason() { return probe().reason; }

void require_device(int32_t index, const char* who) {
  const Probe& p = probe();
  if (p.count == 0)
    fail(CH_ERR_DEVICE, who, ": no CUDA device: cuda:", index, " was requested; ", p.reason);
  if (index < 0 || index >= p.count)
    fail(CH_ERR_DEVICE, who, ": no CUDA device: cuda:", index, " was requested; this machine has ",
         p.count, " CUDA device", p.count == 1 ? "" : "s", " (cuda:0",
         p.count > 1 ? " to cuda:" : "", p.count > 1 ? std::to_string(p.count - 1) : std::string(),
         ")");
#if !defined(CH_HAVE_CUDNN)
  // CH_REQUIRE_CUDNN=1 in a build without cuDNN: no CUDA work at all (with
  // cuDNN built, cuda/cudnn/'s handle() checks).
  config::check_cudnn_required(who, true);
#endif
}

bool context_active(int32_t device) {
#if defined(CH_CUDA_EMULATED_RUNTIME)
  return emu::context_created(device);
#else
  using GetState = int (*)(int, unsigned int*, int*);  // CUresult (CUdevice, flags, active)
  static const GetState get = [] {
    void* fn = nullptr;
    cudaDriverEntryPointQueryResult q{};
    if (cudaGetDriverEntryPointByVersion("cuDevicePrimaryCtxGetState", &fn, 12000,
                                         cudaEnableDefault, &q) != cudaSuccess ||
        q != cudaDriverEntryPointSuccess) {
      cudaGetLastError();
      fn = nullptr;
    }
    return reinterpret_cast<GetState>(fn);
  }();
  unsigned int flags = 0;
  int active = 0;
  // Unknown: say active, so the guard restores as before.
  if (!get) return true;
  return get(device, &flags, &active) == 0 && active != 0;
#endif
}

void release_failed(cudaError_t e, const char* call) {
  if (e == cudaSuccess) return;
  cudaGetLastError();
  static std::atomic<int> reported{0};
  if (reported.fetch_add(1) < 8)
    std::fprintf(stderr, "chainerc: %s failed during a release: %s\n", call, error_text(e).c_str());
}

}  // namespace chainerc::cuda
