#include "streams.h"

#include <memory>
#include <mutex>
#include <vector>

#include "cuda_util.h"

namespace chainerc::cuda {
namespace {

struct DeviceStreams {
  std::once_flag engine_once, copy_once;
  cudaStream_t engine = nullptr;
  cudaStream_t copy = nullptr;
};

std::vector<std::unique_ptr<DeviceStreams>>& streams() {
  static auto* v = [] {  // never destroyed: streams live as long as the process
    auto* r = new std::vector<std::unique_ptr<DeviceStreams>>;
    for (int32_t i = 0, n = device_count(); i < n; ++i)
      r->push_back(std::make_unique<DeviceStreams>());
    return r;
  }();
  return *v;
}

cudaStream_t make_stream(int32_t device, const char* what) {
  DeviceGuard guard(device);
  cudaStream_t s = nullptr;
  check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), what, "cudaStreamCreateWithFlags");
  return s;
}

}  // namespace

cudaStream_t engine_stream(int32_t device) {
  require_device(device, "engine stream");
  DeviceStreams& d = *streams()[static_cast<size_t>(device)];
  std::call_once(d.engine_once, [&] { d.engine = make_stream(device, "engine stream"); });
  return d.engine;
}

cudaStream_t current_engine_stream() {
  int d = 0;
  check(cudaGetDevice(&d), "engine stream", "cudaGetDevice");
  return engine_stream(d);
}

cudaStream_t copy_stream(int32_t device) {
  require_device(device, "copy stream");
  DeviceStreams& d = *streams()[static_cast<size_t>(device)];
  std::call_once(d.copy_once, [&] { d.copy = make_stream(device, "copy stream"); });
  return d.copy;
}

void order_after(cudaStream_t waiter, cudaStream_t after, int32_t after_device, const char* who) {
  if (waiter == after) return;
  cudaEvent_t ev = nullptr;
  {
    DeviceGuard guard(after_device);
    check(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming), who, "cudaEventCreate");
    const cudaError_t e = cudaEventRecord(ev, after);
    if (e != cudaSuccess) {
      cudaEventDestroy(ev);
      check(e, who, "cudaEventRecord");
    }
  }
  const cudaError_t e = cudaStreamWaitEvent(waiter, ev, 0);
  release_failed(cudaEventDestroy(ev), "cudaEventDestroy");  // freed once the wait is done
  check(e, who, "cudaStreamWaitEvent");
}

}  // namespace chainerc::cuda
