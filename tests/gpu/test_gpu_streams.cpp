// Streams done right (issue 46), on the emulated devices, whose streams are
// queues that hold work while it must wait (cuda/emulation/runtime.cpp):
// emu::hold_stream stands for a GPU that has not reached a stream's work yet.
//  - chainerc's work runs on each device's non-blocking engine stream, not on
//    the legacy default stream;
//  - a block used on another stream than its own is reused only once an
//    event recorded on that stream has completed (record_stream), and the
//    work that still reads it gets its old contents;
//  - host-to-device copies of fresh arrays go through page-locked staging
//    memory on the copy stream: they do not wait for the engine's queued
//    work (the previous step), and the engine's use of them waits for them;
//  - a stream of the host's is ordered with the engine's work;
//  - training with per-step uploads equals the same training with a
//    synchronisation after every upload, bit for bit, and adds no host
//    synchronisation to a step.
#include <ch/ch.h>
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "cuda/runtime/memory.h"
#include "cuda/runtime/streams.h"
#include "require_gpu.h"

namespace {

#define ASSERT_CH_OK(call)                                                                         \
  do {                                                                                             \
    ch_status st_ = (call);                                                                        \
    ASSERT_EQ(st_, CH_OK) << #call << " -> " << ch_status_name(st_) << ": " << ch_error_message(); \
  } while (0)

namespace emu = chainerc::cuda::emu;

uint64_t syncs() { return emu::host_synchronizations(); }

std::vector<float> read_all(ch_array* a) {
  std::vector<float> v(static_cast<size_t>(ch_array_size(a)));
  EXPECT_EQ(ch_array_read(a, v.data(), v.size() * sizeof(float)), CH_OK) << ch_error_message();
  return v;
}
cudaStream_t engine() { return static_cast<cudaStream_t>(ch_cuda_engine_stream(0)); }

class GpuStreams : public ::testing::Test {
 protected:
  void SetUp() override {
    if (ch_cuda_device_count() == 0)
      CH_GPU_SKIP() << "no CUDA device: " << ch_cuda_unavailable_reason();
  }
  void TearDown() override {
    if (ch_cuda_device_count() == 0) return;
    emu::hold_stream(engine(), false);
    emu::hold_stream(nullptr, false);
    ch_cuda_synchronize(0);
  }
  static ch_array* upload(const std::vector<float>& v) {
    const int64_t n = static_cast<int64_t>(v.size());
    ch_array* a = nullptr;
    EXPECT_EQ(ch_array_new(&a, CH_FLOAT32, &n, 1, v.data(), ch_device_cuda(0)), CH_OK)
        << ch_error_message();
    return a;
  }
  static std::vector<float> read(ch_array* a) { return read_all(a); }
  // relu(x) on the device, as a built-in function queues it.
  static ch_variable* relu_of(ch_array* x) {
    ch_variable *vx = nullptr, *vy = nullptr;
    EXPECT_EQ(ch_variable_new(&vx, x, 1), CH_OK);
    EXPECT_EQ(ch_functions_relu(&vy, vx), CH_OK) << ch_error_message();
    ch_variable_release(vx);
    return vy;
  }
  static std::vector<float> data_of(ch_variable* v) {
    ch_array* a = nullptr;
    EXPECT_EQ(ch_variable_data(&a, v), CH_OK);
    std::vector<float> r = read(a);
    ch_array_release(a);
    return r;
  }
  static std::vector<float> relu_host(std::vector<float> v) {
    for (float& e : v) e = std::max(e, 0.0f);
    return v;
  }
};

std::vector<float> ramp(size_t n, float from) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = from + static_cast<float>(i % 17) - 8.0f;
  return v;
}

TEST_F(GpuStreams, TheEngineRunsOnANonBlockingStreamOfItsOwn) {
  ASSERT_NE(ch_cuda_engine_stream(0), nullptr);
  ASSERT_NE(ch_cuda_engine_stream(1), nullptr);
  EXPECT_NE(ch_cuda_engine_stream(0), ch_cuda_engine_stream(1));
  EXPECT_EQ(ch_cuda_engine_stream(7), nullptr);
  EXPECT_EQ(ch_cuda_engine_stream(-1), nullptr);
  // The legacy default stream held: the engine's work does not wait for it.
  const std::vector<float> x = ramp(300, 0.5f);
  ch_array* a = upload(x);
  emu::hold_stream(nullptr, true);
  ch_variable* y = relu_of(a);
  EXPECT_EQ(emu::stream_pending(engine()), 0u) << "engine work waited for the legacy stream";
  EXPECT_EQ(data_of(y), relu_host(x));
  emu::hold_stream(nullptr, false);
  ch_variable_release(y);
  ch_array_release(a);
}

TEST_F(GpuStreams, ABlockUsedOnAnotherStreamIsReusedOnlyAfterItsEvent) {
  chainerc::CachingAllocator& memory = chainerc::cuda::device_allocator(0, "test");
  // Over 1 MiB: blocks of their own segments, so the reused one is found by address.
  const std::vector<float> x = ramp(400000, 0.25f), other = ramp(400000, -3.0f);
  ch_array* a = upload(x);  // on the copy stream, then used by the engine
  ASSERT_CH_OK(ch_cuda_synchronize(0));
  void* block = ch_array_data(a);
  // The engine has not got to relu(a) yet when a is released.
  emu::hold_stream(engine(), true);
  ch_variable* y = relu_of(a);
  ch_array_release(a);
  EXPECT_GE(emu::stream_pending(engine()), 1u);
  EXPECT_EQ(memory.blocks_waiting_for_events(), 1u);
  // A new upload of the same size must not get the block relu still reads,
  // and does not wait for the engine either (its copy is done already).
  const uint64_t s0 = syncs();
  ch_array* b = upload(other);
  EXPECT_NE(ch_array_data(b), block) << "a block was reused while another stream used it";
  EXPECT_EQ(syncs() - s0, 0u);
  EXPECT_EQ(emu::stream_pending(chainerc::cuda::copy_stream(0)), 0u);
  // The engine gets there: relu read the old contents.
  emu::hold_stream(engine(), false);
  EXPECT_EQ(data_of(y), relu_host(x));
  EXPECT_EQ(read(b), other);
  // The event has completed: the block is reused.
  ch_array* c = upload(other);
  EXPECT_EQ(ch_array_data(c), block);
  EXPECT_EQ(memory.blocks_waiting_for_events(), 0u);
  for (ch_array* r : {b, c}) ch_array_release(r);
  ch_variable_release(y);
}

TEST_F(GpuStreams, TheEngineWaitsForAnUploadItReads) {
  cudaStream_t copy = nullptr;
  // The copy stream, as the upload path uses it: found through a held one.
  const std::vector<float> x = ramp(5000, 1.5f);
  ch_array* warm = upload(x);  // makes the copy stream
  ch_array_release(warm);
  ASSERT_CH_OK(ch_cuda_synchronize(0));
  copy = chainerc::cuda::copy_stream(0);
  emu::hold_stream(copy, true);
  const uint64_t s0 = syncs();
  ch_array* a = upload(x);
  EXPECT_EQ(emu::stream_pending(copy), 1u) << "the copy is queued on the copy stream";
  ch_variable* y = relu_of(a);
  EXPECT_GE(emu::stream_pending(engine()), 1u) << "relu waits for the copy";
  EXPECT_EQ(syncs() - s0, 0u) << "an upload makes no host synchronisation";
  EXPECT_EQ(data_of(y), relu_host(x));  // the read waits for both
  emu::hold_stream(copy, false);
  ch_variable_release(y);
  ch_array_release(a);
}

TEST_F(GpuStreams, AStreamOfTheHostsIsOrderedWithTheEngine) {
  const std::vector<float> x = ramp(777, -0.75f);
  ch_array* a = upload(x);
  ch_stream* s = nullptr;
  ASSERT_CH_OK(ch_stream_new(&s, ch_device_cuda(0)));
  emu::hold_stream(engine(), true);
  ch_variable* y = relu_of(a);
  ch_array* ya = nullptr;
  ASSERT_CH_OK(ch_variable_data(&ya, y));
  ch_array* host = nullptr;
  ASSERT_CH_OK(ch_array_to_device_async(&host, ya, ch_device_cpu(), s));
  EXPECT_GE(emu::stream_pending(static_cast<cudaStream_t>(ch_stream_native(s))), 1u)
      << "the copy waits for relu, queued on the engine before it";
  ASSERT_CH_OK(ch_stream_synchronize(s));
  std::vector<float> got(x.size());
  std::memcpy(got.data(), ch_array_data(host), got.size() * sizeof(float));
  EXPECT_EQ(got, relu_host(x));
  emu::hold_stream(engine(), false);
  for (ch_array* r : {a, ya, host}) ch_array_release(r);
  ch_variable_release(y);
  ch_stream_release(s);
}

TEST_F(GpuStreams, LargeUploadsAndCopiesBetweenDevicesKeepTheirValues) {
  // Above the staging buffers' size (8 MiB) the driver's path is taken.
  const std::vector<float> x = ramp((size_t{9} << 20) / sizeof(float) + 3, 2.0f);
  ch_array* a = upload(x);
  EXPECT_EQ(read(a), x);
  ch_array* b = nullptr;
  ASSERT_CH_OK(ch_array_to_device(&b, a, ch_device_cuda(1)));
  EXPECT_EQ(read(b), x);
  ch_array* c = nullptr;
  ASSERT_CH_OK(ch_array_to_device(&c, b, ch_device_cuda(0)));
  EXPECT_EQ(read(c), x);
  for (ch_array* r : {a, b, c}) ch_array_release(r);
}

// An MLP trained on a new batch each step, uploaded with ch_array_new inside
// the step: asynchronous uploads against the same run with a
// synchronisation after each upload (the synchronous path), parameters equal
// bit for bit; and between the upload and the update, no host
// synchronisation.
std::vector<float> train(bool synchronous, uint64_t* step_syncs) {
  constexpr int64_t kIn = 20, kOut = 5, kBatch = 16;
  ch_function* l = nullptr;
  EXPECT_EQ(ch_functions_linear_new(&l, kIn, kOut, CH_FLOAT32, 1.0, 0.0, 0, nullptr, nullptr),
            CH_OK);
  ch_function_set* set = nullptr;
  EXPECT_EQ(ch_function_set_new(&set), CH_OK);
  EXPECT_EQ(ch_function_set_add_function(set, "l", l), CH_OK);
  ch_array *w = nullptr, *g = nullptr;
  EXPECT_EQ(ch_function_set_parameter(&w, &g, nullptr, set, 0), CH_OK);
  std::vector<float> w0(static_cast<size_t>(ch_array_size(w)));
  for (size_t i = 0; i < w0.size(); ++i) w0[i] = 0.01f * static_cast<float>(i % 13) - 0.06f;
  EXPECT_EQ(ch_array_write(w, w0.data(), w0.size() * sizeof(float)), CH_OK);
  ch_array_release(w);
  ch_array_release(g);
  EXPECT_EQ(ch_function_set_to_gpu(set, ch_device_cuda(0)), CH_OK);
  ch_optimizer* opt = nullptr;
  EXPECT_EQ(ch_optimizer_momentum_sgd_new(&opt, 0.05, 0.9), CH_OK);
  EXPECT_EQ(ch_optimizer_setup(opt, set), CH_OK);
  *step_syncs = 0;
  for (int step = 0; step < 6; ++step) {
    std::vector<float> xb(kBatch * kIn);
    std::vector<int32_t> tb(kBatch);
    for (size_t i = 0; i < xb.size(); ++i)
      xb[i] = static_cast<float>((i * 7 + static_cast<size_t>(step) * 3) % 11) * 0.1f - 0.5f;
    for (int64_t i = 0; i < kBatch; ++i) tb[i] = static_cast<int32_t>((i + step) % kOut);
    EXPECT_EQ(ch_optimizer_zero_grads(opt), CH_OK);
    const uint64_t s0 = syncs();
    const int64_t xs[2] = {kBatch, kIn};
    ch_array *xa = nullptr, *ta = nullptr;
    EXPECT_EQ(ch_array_new(&xa, CH_FLOAT32, xs, 2, xb.data(), ch_device_cuda(0)), CH_OK);
    EXPECT_EQ(ch_array_new(&ta, CH_INT32, &kBatch, 1, tb.data(), ch_device_cuda(0)), CH_OK);
    // The host buffers may change at once: the uploads went through staging.
    std::fill(xb.begin(), xb.end(), 1e6f);
    if (synchronous) {
      EXPECT_EQ(ch_cuda_synchronize(0), CH_OK);
    }
    const uint64_t s1 = syncs();
    ch_variable *x = nullptr, *t = nullptr, *y = nullptr, *loss = nullptr;
    EXPECT_EQ(ch_variable_new(&x, xa, 0), CH_OK);
    EXPECT_EQ(ch_variable_new(&t, ta, 0), CH_OK);
    EXPECT_EQ(ch_function_apply(l, &x, 1, &y, 1, nullptr), CH_OK);
    EXPECT_EQ(ch_functions_softmax_cross_entropy(&loss, y, t), CH_OK);
    EXPECT_EQ(ch_variable_backward(loss, 0), CH_OK);
    EXPECT_EQ(ch_optimizer_update(opt), CH_OK);
    *step_syncs += (synchronous ? syncs() - s1 : syncs() - s0);
    for (ch_variable* v : {x, t, y, loss}) ch_variable_release(v);
    ch_array_release(xa);
    ch_array_release(ta);
  }
  EXPECT_EQ(ch_function_set_parameter(&w, &g, nullptr, set, 0), CH_OK);
  std::vector<float> r = read_all(w);
  ch_array_release(w);
  ch_array_release(g);
  ch_optimizer_release(opt);
  ch_function_release(l);
  ch_function_set_release(set);
  return r;
}

TEST_F(GpuStreams, AsynchronousUploadsTrainAsSynchronousOnesWithoutASync) {
  uint64_t async_syncs = 0, sync_syncs = 0;
  const std::vector<float> a = train(false, &async_syncs);
  const std::vector<float> b = train(true, &sync_syncs);
  ASSERT_EQ(a.size(), b.size());
  EXPECT_EQ(a, b) << "parameters after 6 steps differ between the two paths";
  EXPECT_EQ(async_syncs, 0u) << "host synchronisations from the upload to the update";
  EXPECT_EQ(sync_syncs, 0u);
  // Against the start: the steps did train.
  EXPECT_NE(a[0], 0.01f * 0 - 0.06f);
}

}  // namespace
