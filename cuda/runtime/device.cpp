#include <mutex>

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
}

}  // namespace chainerc::cuda
