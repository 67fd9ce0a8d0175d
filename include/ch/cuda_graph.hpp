// chainerc — C++: a training step captured as a CUDA graph (<ch/cuda.h>'s
// ch_cuda_graph_*), as RAII. Included by <ch/ch.hpp>; usable on its own.
//
//   step();                                   // one eager step first
//   ch::CudaGraph graph = ch::CudaGraph::capture(ch_device_cuda(0), [&] { step(); });
//   for (...) graph.replay_with({x}, {next_batch});   // copy the batch in, replay
//
// Errors are ch::Error as everywhere (ch::check). A capture whose body throws
// is ended (and its graph dropped) before the exception leaves capture().
#ifndef CH_CUDA_GRAPH_HPP
#define CH_CUDA_GRAPH_HPP

#include <ch/ch.hpp>
#include <utility>
#include <vector>

namespace ch {

/// A captured CUDA graph (move-only; releases it when destroyed). Threading:
/// as ch_cuda_graph (replays from any thread).
class CudaGraph {
 public:
  CudaGraph() noexcept = default;
  /// Runs `body` with `device`'s work captured; the graph it recorded.
  template <typename Body>
  static CudaGraph capture(ch_device device, Body&& body) {
    check(ch_cuda_graph_begin_capture(device));
    try {
      body();
    } catch (...) {
      ch_cuda_graph* g = nullptr;
      if (ch_cuda_graph_end_capture(&g, device) == CH_OK) ch_cuda_graph_release(g);
      throw;
    }
    ch_cuda_graph* g = nullptr;
    check(ch_cuda_graph_end_capture(&g, device));
    return CudaGraph(g);
  }
  /// Takes ownership of a graph from ch_cuda_graph_end_capture.
  explicit CudaGraph(ch_cuda_graph* g) noexcept : g_(g) {}
  CudaGraph(CudaGraph&& o) noexcept : g_(std::exchange(o.g_, nullptr)) {}
  CudaGraph& operator=(CudaGraph&& o) noexcept {
    if (this != &o) {
      ch_cuda_graph_release(g_);
      g_ = std::exchange(o.g_, nullptr);
    }
    return *this;
  }
  CudaGraph(const CudaGraph&) = delete;
  CudaGraph& operator=(const CudaGraph&) = delete;
  ~CudaGraph() { ch_cuda_graph_release(g_); }

  /// Queue the captured work once more.
  void replay() { check(ch_cuda_graph_replay(g_)); }
  /// Copy values[i] into targets[i] (same dtype and shape), then replay.
  void replay_with(const std::vector<Array>& targets, const std::vector<Array>& values) {
    if (targets.size() != values.size())
      throw Error(CH_ERR_INVALID_ARGUMENT,
                  "CudaGraph::replay_with: " + std::to_string(targets.size()) + " targets but " +
                      std::to_string(values.size()) + " values");
    std::vector<ch_array*> t;
    std::vector<const ch_array*> v;
    for (size_t i = 0; i < targets.size(); ++i) {
      t.push_back(targets[i].get());
      v.push_back(values[i].get());
    }
    check(ch_cuda_graph_replay_with(g_, t.data(), v.data(), static_cast<int32_t>(t.size())));
  }
  ch_device device() const noexcept { return ch_cuda_graph_device(g_); }
  /// Kernels and cuBLAS calls recorded (what an eager step launches one by one).
  int64_t size() const noexcept { return ch_cuda_graph_size(g_); }
  ch_cuda_graph* get() const noexcept { return g_; }
  explicit operator bool() const noexcept { return g_ != nullptr; }

 private:
  ch_cuda_graph* g_ = nullptr;
};

}  // namespace ch

#endif  // CH_CUDA_GRAPH_HPP
