#include "deferred_errors.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "core/error.h"
#include "cuda_util.h"
#include "streams.h"

namespace chainerc::cuda {

// Words per device: a step launches a few checks; when every word is taken
// before a synchronisation, the next check synchronises to read them.
constexpr int kSlots = 256;

struct CapturedChecks {
  int32_t device = 0;
  std::vector<std::pair<int, std::shared_ptr<const DescribeBadIndex>>> slots;
  ~CapturedChecks();
};

namespace {

struct DeviceChecks {
  std::mutex mutex;
  unsigned long long* words = nullptr;  // 2 kSlots on the device, all ones when free
  // The checks launched and not yet read, in launch order: (slot, message).
  std::vector<std::pair<int, std::shared_ptr<const DescribeBadIndex>>> pending;
  std::vector<bool> reserved = std::vector<bool>(kSlots, false);  // slots of captured graphs
  CapturedChecks* capture = nullptr;                              // a capture in progress
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

// Locked: the words exist (cudaMalloc: not during a capture).
void make_words(DeviceChecks& d, int32_t device) {
  if (d.words) return;
  DeviceGuard guard(device);
  void* p = nullptr;
  check(cudaMalloc(&p, 2 * kSlots * sizeof(unsigned long long)), "device-side check", "cudaMalloc");
  check(cudaMemsetAsync(p, 0xff, 2 * kSlots * sizeof(unsigned long long), engine_stream(device)),
        "device-side check", "cudaMemsetAsync");
  d.words = static_cast<unsigned long long*>(p);
}

// Locked: a slot neither pending nor a graph's, or -1.
int free_slot(const DeviceChecks& d) {
  std::vector<bool> taken = d.reserved;
  for (const auto& p : d.pending) taken[static_cast<size_t>(p.first)] = true;
  for (int i = 0; i < kSlots; ++i)
    if (!taken[static_cast<size_t>(i)]) return i;
  return -1;
}

}  // namespace

CapturedChecks::~CapturedChecks() {
  if (slots.empty() || device < 0 || device >= device_count()) return;
  DeviceChecks& d = *per_device()[static_cast<size_t>(device)];
  std::lock_guard<std::mutex> l(d.mutex);
  for (const auto& s : slots) d.reserved[static_cast<size_t>(s.first)] = false;
}

unsigned long long* deferred_check_slot(int32_t device, DescribeBadIndex describe) {
  DeviceChecks& d = of(device);
  {
    std::lock_guard<std::mutex> l(d.mutex);
    make_words(d, device);
    const int slot = free_slot(d);
    auto message = std::make_shared<const DescribeBadIndex>(std::move(describe));
    if (d.capture) {
      // The graph's own slot: its replays write it, and each replay makes it
      // pending again (replayed_checks).
      if (slot < 0)
        fail(CH_ERR_UNSUPPORTED, "device-side check: more than ", kSlots,
             " checks on cuda:", device, " in one captured graph");
      d.reserved[static_cast<size_t>(slot)] = true;
      d.capture->slots.emplace_back(slot, std::move(message));
      return d.words + 2 * slot;
    }
    if (slot >= 0) {
      d.pending.emplace_back(slot, std::move(message));
      return d.words + 2 * slot;
    }
    describe = *message;
  }
  // Every word is taken: read them now (this one time, a synchronisation).
  report_deferred_checks(device);
  return deferred_check_slot(device, std::move(describe));
}

void report_deferred_checks(int32_t device) {
  if (device < 0 || device >= device_count()) return;
  DeviceChecks& d = *per_device()[static_cast<size_t>(device)];
  std::vector<std::pair<int, std::shared_ptr<const DescribeBadIndex>>> pending;
  std::vector<unsigned long long> found(2 * kSlots);
  {
    std::lock_guard<std::mutex> l(d.mutex);
    if (d.pending.empty()) return;
    pending.swap(d.pending);
    DeviceGuard guard(device);
    const cudaStream_t s = engine_stream(device);
    const size_t bytes = found.size() * sizeof(unsigned long long);
    // Into pageable memory: returns once the copy (after the stream's work) is done.
    check(cudaMemcpyAsync(found.data(), d.words, bytes, cudaMemcpyDeviceToHost, s),
          "device-side check", "cudaMemcpyAsync");
    check(cudaMemsetAsync(d.words, 0xff, bytes, s), "device-side check", "cudaMemsetAsync");
  }
  for (const auto& p : pending) {
    const size_t i = static_cast<size_t>(p.first);
    if (found[2 * i] != ~0ull)
      fail(CH_ERR_INVALID_ARGUMENT,
           (*p.second)(static_cast<int64_t>(found[2 * i]),
                       static_cast<int64_t>(static_cast<int32_t>(found[2 * i + 1]))),
           " (found on the device, reported at the next synchronisation)");
  }
}

int64_t pending_deferred_checks(int32_t device) {
  if (device < 0 || device >= device_count()) return 0;
  DeviceChecks& d = *per_device()[static_cast<size_t>(device)];
  std::lock_guard<std::mutex> l(d.mutex);
  return static_cast<int64_t>(d.pending.size());
}

void begin_capture_checks(int32_t device) {
  DeviceChecks& d = of(device);
  std::lock_guard<std::mutex> l(d.mutex);
  make_words(d, device);
  if (d.capture) fail(CH_ERR_INTERNAL, "device-side checks: a capture is open on cuda:", device);
  d.capture = new CapturedChecks;
  d.capture->device = device;
}

std::shared_ptr<CapturedChecks> end_capture_checks(int32_t device) {
  DeviceChecks& d = of(device);
  std::lock_guard<std::mutex> l(d.mutex);
  std::shared_ptr<CapturedChecks> c(d.capture);
  d.capture = nullptr;
  return c;
}

void replayed_checks(const CapturedChecks& checks) {
  if (checks.slots.empty()) return;
  DeviceChecks& d = of(checks.device);
  std::lock_guard<std::mutex> l(d.mutex);
  for (const auto& s : checks.slots) {
    const bool already = std::any_of(d.pending.begin(), d.pending.end(),
                                     [&](const auto& p) { return p.first == s.first; });
    if (!already) d.pending.push_back(s);
  }
}

}  // namespace chainerc::cuda
