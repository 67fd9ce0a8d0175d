// A training step captured as a CUDA graph (issue 46 point 2) through the C
// API (ch_cuda_graph_*) and the C++ class (ch::CudaGraph): replaying a
// captured MLP step (zero_grads, forward, backward, MomentumSGD update) gives
// the parameters and losses of the same steps run eagerly, with new batches
// copied in each step (ch_cuda_graph_replay_with); a bad label in a replayed
// step is reported at the next synchronisation; bad use (the CPU, no capture,
// a second capture, a host synchronisation or a host copy during capture,
// another thread, shape or dtype changes, released handles) is an error
// naming the problem, after which the device works as before. On the emulated
// devices the launches and synchronisations of an eager and a replayed step
// are counted: one graph launch and no synchronisation per replay.
#include <ch/ch.h>
#include <gtest/gtest.h>

#include <ch/ch.hpp>
#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "cuda/runtime/launch_count.h"
#include "require_gpu.h"
#if defined(CH_CUDA_EMULATION)
#include <cuda_runtime_api.h>
#endif

namespace {

#define ASSERT_CH_OK(call)                                                                         \
  do {                                                                                             \
    ch_status st_ = (call);                                                                        \
    ASSERT_EQ(st_, CH_OK) << #call << " -> " << ch_status_name(st_) << ": " << ch_error_message(); \
  } while (0)
#define EXPECT_CH_OK(call)                                                                         \
  do {                                                                                             \
    ch_status st_ = (call);                                                                        \
    EXPECT_EQ(st_, CH_OK) << #call << " -> " << ch_status_name(st_) << ": " << ch_error_message(); \
  } while (0)

constexpr int64_t kIn = 24, kHidden = 16, kOut = 6, kBatch = 8;
const ch_device kGpu{CH_DEVICE_CUDA, 0};

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// The batch of step `s` (inputs and labels), the same for both runs.
void batch(int s, std::vector<float>* x, std::vector<int32_t>* t) {
  x->resize(kBatch * kIn);
  t->resize(kBatch);
  for (size_t i = 0; i < x->size(); ++i)
    (*x)[i] = static_cast<float>((i * 5 + static_cast<size_t>(s) * 11) % 23) * 0.05f - 0.5f;
  for (int64_t i = 0; i < kBatch; ++i) (*t)[i] = static_cast<int32_t>((i * 3 + s) % kOut);
}

// An MLP on cuda:0 with fixed initial parameters, its optimizer and its
// static input arrays (what a captured step reads).
struct Mlp {
  ch_function* l[2] = {};
  ch_function_set* set = nullptr;
  ch_optimizer* opt = nullptr;
  ch_array* x = nullptr;
  ch_array* t = nullptr;

  Mlp() {
    const int64_t in[2] = {kIn, kHidden}, out[2] = {kHidden, kOut};
    const char* names[2] = {"l1", "l2"};
    EXPECT_CH_OK(ch_function_set_new(&set));
    for (int i = 0; i < 2; ++i) {
      EXPECT_CH_OK(
          ch_functions_linear_new(&l[i], in[i], out[i], CH_FLOAT32, 1.0, 0.0, 0, nullptr, nullptr));
      EXPECT_CH_OK(ch_function_set_add_function(set, names[i], l[i]));
    }
    for (size_t p = 0, n = ch_function_set_parameter_count(set); p < n; ++p) {
      ch_array *a = nullptr, *g = nullptr;
      EXPECT_CH_OK(ch_function_set_parameter(&a, &g, nullptr, set, p));
      std::vector<float> v(static_cast<size_t>(ch_array_size(a)));
      for (size_t i = 0; i < v.size(); ++i)
        v[i] = 0.02f * static_cast<float>((i * 7 + p * 3) % 19) - 0.18f;
      EXPECT_CH_OK(ch_array_write(a, v.data(), v.size() * sizeof(float)));
      ch_array_release(a);
      ch_array_release(g);
    }
    EXPECT_CH_OK(ch_function_set_to_gpu(set, kGpu));
    EXPECT_CH_OK(ch_optimizer_momentum_sgd_new(&opt, 0.05, 0.9));
    EXPECT_CH_OK(ch_optimizer_setup(opt, set));
    const int64_t xs[2] = {kBatch, kIn};
    EXPECT_CH_OK(ch_array_new_empty(&x, CH_FLOAT32, xs, 2, kGpu));
    EXPECT_CH_OK(ch_array_new_empty(&t, CH_INT32, &kBatch, 1, kGpu));
  }
  ~Mlp() {
    ch_array_release(x);
    ch_array_release(t);
    ch_optimizer_release(opt);
    for (ch_function* f : l) ch_function_release(f);
    ch_function_set_release(set);
  }
  // One step on the static inputs; *loss: the loss variable (new reference).
  ch_status step(ch_variable** loss) {
    ch_variable *vx = nullptr, *vt = nullptr, *a = nullptr, *h = nullptr, *y = nullptr;
    ch_status st = ch_optimizer_zero_grads(opt);
    if (st == CH_OK) st = ch_variable_new(&vx, x, 0);
    if (st == CH_OK) st = ch_variable_new(&vt, t, 0);
    if (st == CH_OK) st = ch_function_apply(l[0], &vx, 1, &a, 1, nullptr);
    if (st == CH_OK) st = ch_functions_relu(&h, a);
    if (st == CH_OK) st = ch_function_apply(l[1], &h, 1, &y, 1, nullptr);
    if (st == CH_OK) st = ch_functions_softmax_cross_entropy(loss, y, vt);
    if (st == CH_OK) st = ch_variable_backward(*loss, 0);
    if (st == CH_OK) st = ch_optimizer_update(opt);
    for (ch_variable* v : {vx, vt, a, h, y}) ch_variable_release(v);
    return st;
  }
  void load(int s) {
    std::vector<float> xb;
    std::vector<int32_t> tb;
    batch(s, &xb, &tb);
    EXPECT_CH_OK(ch_array_write(x, xb.data(), xb.size() * sizeof(float)));
    EXPECT_CH_OK(ch_array_write(t, tb.data(), tb.size() * sizeof(int32_t)));
  }
  std::vector<float> parameters() {
    std::vector<float> all;
    for (size_t p = 0, n = ch_function_set_parameter_count(set); p < n; ++p) {
      ch_array *a = nullptr, *g = nullptr;
      EXPECT_CH_OK(ch_function_set_parameter(&a, &g, nullptr, set, p));
      std::vector<float> v(static_cast<size_t>(ch_array_size(a)));
      EXPECT_CH_OK(ch_array_read(a, v.data(), v.size() * sizeof(float)));
      all.insert(all.end(), v.begin(), v.end());
      ch_array_release(a);
      ch_array_release(g);
    }
    return all;
  }
};

double value(ch_variable* v) {
  ch_array* a = nullptr;
  EXPECT_CH_OK(ch_variable_data(&a, v));
  double d = NAN;
  EXPECT_CH_OK(ch_array_get(&d, a, 0));
  ch_array_release(a);
  return d;
}

class GpuGraph : public ::testing::Test {
 protected:
  void SetUp() override {
    if (ch_cuda_device_count() == 0)
      CH_GPU_SKIP() << "no CUDA device: " << ch_cuda_unavailable_reason();
  }
};

constexpr int kSteps = 6;

TEST_F(GpuGraph, ReplayingACapturedStepEqualsEagerSteps) {
  // Eager: kSteps steps, a new batch each.
  Mlp eager;
  std::vector<double> eager_loss;
  for (int s = 0; s < kSteps; ++s) {
    eager.load(s);
    ch_variable* loss = nullptr;
    ASSERT_CH_OK(eager.step(&loss));
    eager_loss.push_back(value(loss));
    ch_variable_release(loss);
  }
  // Graph: one eager step, then the step captured (it runs only when
  // replayed) and replayed with each new batch copied in.
  Mlp g;
  g.load(0);
  ch_variable* loss = nullptr;
  ASSERT_CH_OK(g.step(&loss));
  EXPECT_NEAR(value(loss), eager_loss[0], 1e-6 * std::fabs(eager_loss[0]));
  ch_variable_release(loss);
  ASSERT_CH_OK(ch_cuda_graph_begin_capture(kGpu));
  ch_variable* captured_loss = nullptr;
  const ch_status st = g.step(&captured_loss);
  ch_cuda_graph* graph = nullptr;
  ASSERT_CH_OK(ch_cuda_graph_end_capture(&graph, kGpu));
  ASSERT_CH_OK(st);
  ASSERT_NE(graph, nullptr);
  EXPECT_EQ(ch_cuda_graph_device(graph).type, CH_DEVICE_CUDA);
  EXPECT_GT(ch_cuda_graph_size(graph), 10) << "the step's kernels and GEMMs";
  for (int s = 1; s < kSteps; ++s) {
    std::vector<float> xb;
    std::vector<int32_t> tb;
    batch(s, &xb, &tb);
    const int64_t xs[2] = {kBatch, kIn};
    ch_array *hx = nullptr, *ht = nullptr;
    ASSERT_CH_OK(ch_array_new(&hx, CH_FLOAT32, xs, 2, xb.data(), ch_device_cpu()));
    ASSERT_CH_OK(ch_array_new(&ht, CH_INT32, &kBatch, 1, tb.data(), ch_device_cpu()));
    ch_array* targets[2] = {g.x, g.t};
    const ch_array* values[2] = {hx, ht};
    ASSERT_CH_OK(ch_cuda_graph_replay_with(graph, targets, values, 2));
    // The captured loss variable's memory holds this replay's loss.
    EXPECT_NEAR(value(captured_loss), eager_loss[static_cast<size_t>(s)],
                1e-6 * std::fabs(eager_loss[static_cast<size_t>(s)]))
        << "step " << s;
    ch_array_release(hx);
    ch_array_release(ht);
  }
  const std::vector<float> a = eager.parameters(), b = g.parameters();
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i)
    ASSERT_NEAR(b[i], a[i], 1e-6f * (1.0f + std::fabs(a[i]))) << "parameter element " << i;
  EXPECT_NE(a, Mlp().parameters()) << "the steps changed the parameters";
  ch_variable_release(captured_loss);
  ASSERT_CH_OK(ch_cuda_graph_release(graph));
  // After the release the device's memory and work are as before.
  ch_variable* after = nullptr;
  ASSERT_CH_OK(g.step(&after));
  EXPECT_TRUE(std::isfinite(value(after)));
  ch_variable_release(after);
}

TEST_F(GpuGraph, LaunchesAndSynchronisationsOfAnEagerAndAReplayedStep) {
  Mlp m;
  m.load(0);
  ch_variable* loss = nullptr;
  ASSERT_CH_OK(m.step(&loss));
  value(loss);
  ch_variable_release(loss);
  const uint64_t k0 = chainerc::cuda::launch_count(), g0 = chainerc::cuda::gemm_call_count();
#if defined(CH_CUDA_EMULATION)
  const uint64_t s0 = chainerc::cuda::emu::host_synchronizations();
#endif
  ASSERT_CH_OK(m.step(&loss));
  const uint64_t eager_work =
      chainerc::cuda::launch_count() - k0 + chainerc::cuda::gemm_call_count() - g0;
#if defined(CH_CUDA_EMULATION)
  EXPECT_EQ(chainerc::cuda::emu::host_synchronizations() - s0, 0u);
#endif
  ch_variable_release(loss);
  ASSERT_CH_OK(ch_cuda_graph_begin_capture(kGpu));
  ch_variable* captured = nullptr;
  const ch_status st = m.step(&captured);
  ch_cuda_graph* graph = nullptr;
  ASSERT_CH_OK(ch_cuda_graph_end_capture(&graph, kGpu));
  ASSERT_CH_OK(st);
  EXPECT_EQ(static_cast<uint64_t>(ch_cuda_graph_size(graph)), eager_work)
      << "the graph records what an eager step launches";
  const uint64_t k1 = chainerc::cuda::launch_count(), g1 = chainerc::cuda::gemm_call_count();
#if defined(CH_CUDA_EMULATION)
  const uint64_t s1 = chainerc::cuda::emu::host_synchronizations();
  const uint64_t r1 = chainerc::cuda::emu::graph_launches();
  const uint64_t w1 = chainerc::cuda::emu::graph_work_replayed();
#endif
  ASSERT_CH_OK(ch_cuda_graph_replay(graph));
  EXPECT_EQ(chainerc::cuda::launch_count() - k1, 0u) << "a replay launches no kernel itself";
  EXPECT_EQ(chainerc::cuda::gemm_call_count() - g1, 0u);
#if defined(CH_CUDA_EMULATION)
  EXPECT_EQ(chainerc::cuda::emu::host_synchronizations() - s1, 0u);
  EXPECT_EQ(chainerc::cuda::emu::graph_launches() - r1, 1u);
  // Recorded items: the launches and GEMMs, and the memsets beside them.
  const uint64_t replayed = chainerc::cuda::emu::graph_work_replayed() - w1;
  EXPECT_GE(replayed, eager_work);
  std::printf(
      "[   NOTE   ] small MLP step: eager %llu launches (kernels and cuBLAS calls), 0 host "
      "syncs; replay: 1 graph launch running %llu recorded items, 0 host syncs\n",
      static_cast<unsigned long long>(eager_work), static_cast<unsigned long long>(replayed));
#endif
  EXPECT_TRUE(std::isfinite(value(captured)));
  ch_variable_release(captured);
  ch_cuda_graph_release(graph);
}

TEST_F(GpuGraph, ABadLabelInAReplayIsReportedAtTheNextSynchronisation) {
  Mlp m;
  m.load(0);
  ch_variable* loss = nullptr;
  ASSERT_CH_OK(m.step(&loss));
  value(loss);
  ch_variable_release(loss);
  ASSERT_CH_OK(ch_cuda_graph_begin_capture(kGpu));
  ch_variable* captured = nullptr;
  const ch_status st = m.step(&captured);
  ch_cuda_graph* graph = nullptr;
  ASSERT_CH_OK(ch_cuda_graph_end_capture(&graph, kGpu));
  ASSERT_CH_OK(st);
  std::vector<int32_t> bad(kBatch, 1);
  bad[5] = kOut + 3;
  ASSERT_CH_OK(ch_array_write(m.t, bad.data(), bad.size() * sizeof(int32_t)));
  ASSERT_CH_OK(ch_cuda_graph_replay(graph));  // queued: the check runs on the device
  ch_array* a = nullptr;
  ASSERT_CH_OK(ch_variable_data(&a, captured));
  double d = 0;
  EXPECT_EQ(ch_array_get(&d, a, 0), CH_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(has(ch_error_message(), "softmax_cross_entropy: label t[5] = 9 is out of range"))
      << ch_error_message();
  // Good labels again: the next replay is clean.
  m.load(1);
  ASSERT_CH_OK(ch_cuda_graph_replay(graph));
  EXPECT_CH_OK(ch_array_get(&d, a, 0));
  EXPECT_TRUE(std::isfinite(d));
  ch_array_release(a);
  ch_variable_release(captured);
  ch_cuda_graph_release(graph);
}

TEST_F(GpuGraph, BadUseIsAnErrorAndTheDeviceWorksAfterIt) {
  ch_cuda_graph* graph = reinterpret_cast<ch_cuda_graph*>(1);
  EXPECT_EQ(ch_cuda_graph_begin_capture(ch_device_cpu()), CH_ERR_DEVICE);
  EXPECT_TRUE(has(ch_error_message(), "not cpu")) << ch_error_message();
  EXPECT_EQ(ch_cuda_graph_begin_capture(ch_device_cuda(9)), CH_ERR_DEVICE);
  EXPECT_EQ(ch_cuda_graph_end_capture(&graph, kGpu), CH_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(has(ch_error_message(), "no capture in progress on cuda:0")) << ch_error_message();
  EXPECT_EQ(ch_cuda_graph_end_capture(nullptr, kGpu), CH_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(ch_cuda_graph_replay(nullptr), CH_ERR_NULL_HANDLE);
  EXPECT_EQ(ch_cuda_graph_release(nullptr), CH_OK);
  EXPECT_EQ(ch_cuda_graph_size(nullptr), -1);

  Mlp m;
  m.load(0);
  ch_variable* loss = nullptr;
  ASSERT_CH_OK(m.step(&loss));
  ch_array* la = nullptr;
  ASSERT_CH_OK(ch_variable_data(&la, loss));

  // A second capture; then a host synchronisation during the capture.
  ASSERT_CH_OK(ch_cuda_graph_begin_capture(kGpu));
  EXPECT_EQ(ch_cuda_graph_begin_capture(kGpu), CH_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(has(ch_error_message(), "being captured already")) << ch_error_message();
  double d = 0;
  EXPECT_EQ(ch_array_get(&d, la, 0), CH_ERR_UNSUPPORTED);
  EXPECT_TRUE(has(ch_error_message(), "during CUDA graph capture on cuda:0")) << ch_error_message();
  EXPECT_EQ(ch_cuda_synchronize(0), CH_ERR_UNSUPPORTED);
  const float one = 1.0f;
  const int64_t n1 = 1;
  ch_array* up = nullptr;
  EXPECT_EQ(ch_array_new(&up, CH_FLOAT32, &n1, 1, &one, kGpu), CH_ERR_UNSUPPORTED);
  EXPECT_TRUE(has(ch_error_message(), "a copy from the host")) << ch_error_message();
  // Ending on another thread is refused; on this one it reports the first refusal.
  ch_status other = CH_OK;
  std::thread([&] {
    ch_cuda_graph* g2 = nullptr;
    other = ch_cuda_graph_end_capture(&g2, kGpu);
  }).join();
  EXPECT_EQ(other, CH_ERR_INVALID_ARGUMENT);
  graph = reinterpret_cast<ch_cuda_graph*>(1);
  EXPECT_EQ(ch_cuda_graph_end_capture(&graph, kGpu), CH_ERR_UNSUPPORTED);
  EXPECT_EQ(graph, nullptr);
  EXPECT_TRUE(has(ch_error_message(), "failed: copy: a copy to the host")) << ch_error_message();

  // The device works as before.
  EXPECT_CH_OK(ch_array_get(&d, la, 0));
  EXPECT_TRUE(std::isfinite(d));
  ch_array_release(la);
  ch_variable_release(loss);

  // A good graph, then bad replays: nothing copied, nothing replayed.
  ASSERT_CH_OK(ch_cuda_graph_begin_capture(kGpu));
  const ch_status st = m.step(&loss);
  ASSERT_CH_OK(ch_cuda_graph_end_capture(&graph, kGpu));
  ASSERT_CH_OK(st);
  const int64_t wrong_shape[2] = {kBatch + 1, kIn};
  ch_array *wrong = nullptr, *ints = nullptr, *cpu_target = nullptr;
  ASSERT_CH_OK(ch_array_new_full(&wrong, CH_FLOAT32, wrong_shape, 2, 0.5, ch_device_cpu()));
  const int64_t xs[2] = {kBatch, kIn};
  ASSERT_CH_OK(ch_array_new_full(&ints, CH_INT32, xs, 2, 1, ch_device_cpu()));
  ASSERT_CH_OK(ch_array_new_full(&cpu_target, CH_FLOAT32, xs, 2, 0.5, ch_device_cpu()));
  ch_array* t1[1] = {m.x};
  const ch_array* v1[1] = {wrong};
  EXPECT_EQ(ch_cuda_graph_replay_with(graph, t1, v1, 1), CH_ERR_SHAPE);
  EXPECT_TRUE(has(ch_error_message(), "cannot change shapes")) << ch_error_message();
  v1[0] = ints;
  EXPECT_EQ(ch_cuda_graph_replay_with(graph, t1, v1, 1), CH_ERR_DTYPE);
  t1[0] = cpu_target;
  v1[0] = cpu_target;
  EXPECT_EQ(ch_cuda_graph_replay_with(graph, t1, v1, 1), CH_ERR_DEVICE);
  EXPECT_EQ(ch_cuda_graph_replay_with(graph, t1, v1, -1), CH_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(ch_cuda_graph_replay_with(graph, nullptr, nullptr, 1), CH_ERR_INVALID_ARGUMENT);
  EXPECT_CH_OK(ch_cuda_graph_replay_with(graph, nullptr, nullptr, 0));
  EXPECT_TRUE(std::isfinite(value(loss)));
  ASSERT_CH_OK(ch_cuda_graph_release(graph));
  EXPECT_EQ(ch_cuda_graph_replay(graph), CH_ERR_RELEASED_HANDLE);
  EXPECT_EQ(ch_cuda_graph_release(graph), CH_ERR_RELEASED_HANDLE);
  for (ch_array* a : {wrong, ints, cpu_target}) ch_array_release(a);
  ch_variable_release(loss);
}

TEST_F(GpuGraph, TheCppClassEndsACaptureWhoseBodyThrows) {
  Mlp m;
  m.load(2);
  ch_variable* loss = nullptr;
  ASSERT_CH_OK(m.step(&loss));
  ch_variable_release(loss);
  EXPECT_THROW(ch::CudaGraph::capture(kGpu, [] { throw std::runtime_error("in the body"); }),
               std::runtime_error);
  // Not left capturing: a capture works.
  ch::CudaGraph g = ch::CudaGraph::capture(kGpu, [&] { ch::check(m.step(&loss)); });
  ASSERT_TRUE(g);
  EXPECT_GT(g.size(), 0);
  EXPECT_EQ(g.device().index, 0);
  g.replay();
  ch_array* fresh = nullptr;
  ASSERT_CH_OK(ch_array_to_device(&fresh, m.x, kGpu));
  g.replay_with({ch::Array::adopt(ch_array_retain(m.x))}, {ch::Array::adopt(fresh)});
  EXPECT_TRUE(std::isfinite(value(loss)));
  EXPECT_THROW(g.replay_with({}, {ch::Array::adopt(ch_array_retain(m.x))}), ch::Error);
  ch::CudaGraph moved = std::move(g);
  EXPECT_FALSE(g);  // NOLINT(bugprone-use-after-move): moved-from is empty
  moved.replay();
  ch_variable_release(loss);
}

}  // namespace
