#include "deferred_errors.h"

#include <cuda_runtime_api.h>

#include <memory>
#include <mutex>
#include <vector>

#include "core/error.h"
#include "cuda_util.h"

namespace chainerc::cuda {
namespace {

// Words per device: a step launches a few checks; when every word is taken
// before a synchronisation, the next check synchronises to read them.
constexpr int kSlots = 256;

struct DeviceChecks {
  std::mutex mutex;
  unsigned long long* words = nullptr;    // 2 kSlots on the device, all ones when free
  std::vector<DescribeBadIndex> pending;  // pending[i] owns words[2i], words[2i + 1]
};

std::vector<std::unique_ptr<DeviceChecks>>& per_device() {
  static auto* v = [] {  // never destroyed: its device memory lives as long as the process
    auto* r = new std::vector<std::unique_ptr<DeviceChecks>>;
    for (int32_t i = 0, n = device_count(); i < n; ++i)
      r->push_back(std::make_unique<DeviceChecks>());
    return r;
  }();
  return *v;
}

DeviceChecks& of(int32_t device) {
  require_device(device, "device-side check");
  return *per_device()[static_cast<size_t>(device)];
}

}  // namespace

unsigned long long* deferred_check_slot(int32_t device, DescribeBadIndex describe) {
  DeviceChecks& d = of(device);
  {
    std::lock_guard<std::mutex> l(d.mutex);
    if (d.pending.size() < static_cast<size_t>(kSlots)) {
      if (!d.words) {
        DeviceGuard guard(device);
        void* p = nullptr;
        check(cudaMalloc(&p, 2 * kSlots * sizeof(unsigned long long)), "device-side check",
              "cudaMalloc");
        check(cudaMemsetAsync(p, 0xff, 2 * kSlots * sizeof(unsigned long long), nullptr),
              "device-side check", "cudaMemsetAsync");
        d.words = static_cast<unsigned long long*>(p);
      }
      d.pending.push_back(std::move(describe));
      return d.words + 2 * (d.pending.size() - 1);
    }
  }
  // Every word is taken: read them now (this one time, a synchronisation).
  report_deferred_checks(device);
  return deferred_check_slot(device, std::move(describe));
}

void report_deferred_checks(int32_t device) {
  if (device < 0 || device >= device_count()) return;
  DeviceChecks& d = *per_device()[static_cast<size_t>(device)];
  std::vector<DescribeBadIndex> pending;
  std::vector<unsigned long long> found;
  {
    std::lock_guard<std::mutex> l(d.mutex);
    if (d.pending.empty()) return;
    pending.swap(d.pending);
    found.resize(2 * pending.size());
    DeviceGuard guard(device);
    const size_t bytes = found.size() * sizeof(unsigned long long);
    check(cudaMemcpy(found.data(), d.words, bytes, cudaMemcpyDeviceToHost), "device-side check",
          "cudaMemcpy");
    check(cudaMemsetAsync(d.words, 0xff, bytes, nullptr), "device-side check", "cudaMemsetAsync");
  }
  for (size_t i = 0; i < pending.size(); ++i)
    if (found[2 * i] != ~0ull)
      fail(CH_ERR_INVALID_ARGUMENT,
           pending[i](static_cast<int64_t>(found[2 * i]),
                      static_cast<int64_t>(static_cast<int32_t>(found[2 * i + 1]))),
           " (found on the device, reported at the next synchronisation)");
}

int64_t pending_deferred_checks(int32_t device) {
  if (device < 0 || device >= device_count()) return 0;
  DeviceChecks& d = *per_device()[static_cast<size_t>(device)];
  std::lock_guard<std::mutex> l(d.mutex);
  return static_cast<int64_t>(d.pending.size());
}

}  // namespace chainerc::cuda
