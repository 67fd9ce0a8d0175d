#include "graph.h"

#include <cuda_runtime_api.h>

#include <atomic>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "cuda_util.h"
#include "deferred_errors.h"
#include "launch_count.h"
#include "libraries.h"
#include "memory.h"
#include "streams.h"

namespace chainerc::cuda {
namespace {

struct CaptureState {
  std::mutex mutex;
  bool active = false;
  std::thread::id thread;
  int pool = 0;
  uint64_t work_at_begin = 0;
  std::string refused;  // the first call refused during the capture
};

std::vector<std::unique_ptr<CaptureState>>& states() {
  static auto* v = [] {  // never destroyed
    auto* r = new std::vector<std::unique_ptr<CaptureState>>;
    for (int32_t i = 0, n = device_count(); i < n; ++i)
      r->push_back(std::make_unique<CaptureState>());
    return r;
  }();
  return *v;
}

std::atomic<int> g_captures{0};  // captures in progress: capturing()'s fast path

CaptureState& state_of(int32_t device, const char* who) {
  require_device(device, who);
  return *states()[static_cast<size_t>(device)];
}

// Kernels and cuBLAS calls queued so far (what a capture records).
uint64_t work_count() { return launch_count() + gemm_call_count(); }

class CudaGraph final : public DeviceGraph {
 public:
  CudaGraph(int32_t device, cudaGraph_t graph, cudaGraphExec_t exec, int pool,
            std::shared_ptr<CapturedChecks> checks, int64_t size)
      : device_(device),
        graph_(graph),
        exec_(exec),
        pool_(pool),
        checks_(std::move(checks)),
        size_(size) {}
  ~CudaGraph() override {
    // The replays queued must be done before the graph and its memory go.
    DeviceGuard guard(device_);
    if (replayed_ && !capturing(device_))
      release_failed(cudaStreamSynchronize(engine_stream(device_)), "cudaStreamSynchronize");
    release_failed(cudaGraphExecDestroy(exec_), "cudaGraphExecDestroy");
    release_failed(cudaGraphDestroy(graph_), "cudaGraphDestroy");
    device_allocator(device_, "graph release").release_private_pool(pool_);
  }
  Device device() const override { return Device{CH_DEVICE_CUDA, device_}; }
  void replay() override {
    refuse_in_capture(device_, "graph replay", "a replay of another graph");
    DeviceGuard guard(device_);
    check(cudaGraphLaunch(exec_, engine_stream(device_)), "graph replay", "cudaGraphLaunch");
    replayed_ = true;
    if (checks_) replayed_checks(*checks_);
  }
  int64_t size() const override { return size_; }

 private:
  int32_t device_;
  cudaGraph_t graph_;
  cudaGraphExec_t exec_;
  int pool_;
  std::shared_ptr<CapturedChecks> checks_;
  int64_t size_;
  bool replayed_ = false;
};

}  // namespace

bool capturing(int32_t device) {
  if (g_captures.load(std::memory_order_acquire) == 0) return false;
  if (device < 0 || device >= device_count()) return false;
  CaptureState& s = *states()[static_cast<size_t>(device)];
  std::lock_guard<std::mutex> lock(s.mutex);
  return s.active;
}

void refuse_in_capture(int32_t device, const char* who, const char* what) {
  if (!capturing(device)) return;
  CaptureState& s = *states()[static_cast<size_t>(device)];
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    if (s.refused.empty()) s.refused = std::string(who) + ": " + what;
  }
  fail(CH_ERR_UNSUPPORTED, who, ": ", what, " during CUDA graph capture on cuda:", device,
       "; a captured step must not wait for the device nor copy from the host (copy inputs "
       "into the captured arrays before a replay); the capture is invalidated and its end "
       "reports this");
}

void begin_capture(int32_t device) {
  CaptureState& s = state_of(device, "graph capture");
  std::lock_guard<std::mutex> lock(s.mutex);
  if (s.active)
    fail(CH_ERR_INVALID_ARGUMENT, "graph capture: cuda:", device,
         " is being captured already (one capture at a time on a device)");
  // What the engine makes on first use is made now: cudaMalloc and handle
  // creation cannot be captured.
  const cudaStream_t engine = engine_stream(device);
  copy_stream(device);
  cublas_handle(device);
  {
    std::unique_lock<std::mutex> rng;
    curand_generator(device, rng);
  }
  begin_capture_checks(device);
  CachingAllocator& memory = device_allocator(device, "graph capture");
  const int pool = memory.begin_private_pool();
  DeviceGuard guard(device);
  const cudaError_t e = cudaStreamBeginCapture(engine, cudaStreamCaptureModeThreadLocal);
  if (e != cudaSuccess) {
    memory.end_private_pool();
    memory.release_private_pool(pool);
    end_capture_checks(device);
    check(e, "graph capture", "cudaStreamBeginCapture");
  }
  s.active = true;
  s.thread = std::this_thread::get_id();
  s.pool = pool;
  s.refused.clear();
  s.work_at_begin = work_count();
  g_captures.fetch_add(1, std::memory_order_acq_rel);
}

std::shared_ptr<DeviceGraph> end_capture(int32_t device) {
  CaptureState& s = state_of(device, "graph capture");
  std::unique_lock<std::mutex> lock(s.mutex);
  if (!s.active)
    fail(CH_ERR_INVALID_ARGUMENT, "graph capture: no capture in progress on cuda:", device);
  if (s.thread != std::this_thread::get_id())
    fail(CH_ERR_INVALID_ARGUMENT, "graph capture: the capture on cuda:", device,
         " began on another thread; it must end on that thread");
  DeviceGuard guard(device);
  cudaGraph_t graph = nullptr;
  const cudaError_t e = cudaStreamEndCapture(engine_stream(device), &graph);
  if (e != cudaSuccess) cudaGetLastError();
  s.active = false;
  g_captures.fetch_sub(1, std::memory_order_acq_rel);
  const std::string refused = s.refused;
  const int pool = s.pool;
  const int64_t size = static_cast<int64_t>(work_count() - s.work_at_begin);
  lock.unlock();
  CachingAllocator& memory = device_allocator(device, "graph capture");
  memory.end_private_pool();
  std::shared_ptr<CapturedChecks> checks = end_capture_checks(device);
  cudaGraphExec_t exec = nullptr;
  cudaError_t ie = cudaSuccess;
  if (refused.empty() && e == cudaSuccess) {
    ie = cudaGraphInstantiate(&exec, graph, 0);
    if (ie != cudaSuccess) cudaGetLastError();
  }
  if (!refused.empty() || e != cudaSuccess || ie != cudaSuccess) {
    if (graph) release_failed(cudaGraphDestroy(graph), "cudaGraphDestroy");
    memory.release_private_pool(pool);
    if (!refused.empty())
      fail(CH_ERR_UNSUPPORTED, "graph capture on cuda:", device, " failed: ", refused,
           " was refused during the capture");
    fail(CH_ERR_DEVICE, "graph capture on cuda:", device, " failed: ",
         e != cudaSuccess ? "cudaStreamEndCapture: " + error_text(e)
                          : "cudaGraphInstantiate: " + error_text(ie),
         e == cudaErrorStreamCaptureInvalidated
             ? " (work the capture cannot record was issued during it)"
             : "");
  }
  return std::make_shared<CudaGraph>(device, graph, exec, pool, std::move(checks), size);
}

}  // namespace chainerc::cuda
