// User functions (ch_function_new) on CUDA devices through the C API: the
// engine's device dispatch to forward_gpu/backward_gpu, what a GPU callback's
// context gives it (ch_context_device, ch_context_stream, the current device,
// device pointers) and check_backward of such a function on the device.
// Skipped without a CUDA device; runs on the emulated devices in CI.
#include <ch/ch.h>
#include <gtest/gtest.h>

#include <ch/ch.hpp>
#include <cstring>
#include <vector>

#include "../capi/capi_test_util.h"
#include "require_gpu.h"

namespace {

// What the callbacks saw, per phase.
struct Seen {
  int forward_gpu = 0, backward_gpu = 0, forward_cpu = 0, backward_cpu = 0;
  ch_device device{0, 0};
  void* stream = reinterpret_cast<void*>(1);
  int32_t current = -1;
  bool device_pointers = true;
};

// y = 3 * x, computed through the host: the callback copies its input to the
// CPU, scales it and makes the output on ch_context_device(ctx).
ch_status scaled_copy(ch_context* ctx, ch_array* x, ch_array** out) {
  ch_array* host = nullptr;
  ch_status st = ch_array_to_device(&host, x, ch_device_cpu());
  if (st != CH_OK) return st;
  auto* p = static_cast<double*>(ch_array_data(host));
  std::vector<double> v(p, p + ch_array_size(host));
  for (double& e : v) e *= 3;
  st = ch_array_new(out, CH_FLOAT64, ch_array_shape(x), ch_array_ndim(x), v.data(),
                    ch_context_device(ctx));
  ch_array_release(host);
  return st;
}

void observe(Seen* s, ch_context* ctx, ch_array* const* arrays, size_t n) {
  s->device = ch_context_device(ctx);
  s->stream = ch_context_stream(ctx);
  int32_t cur = -1;
  if (s->device.type == CH_DEVICE_CUDA && ch_cuda_current_device(&cur) == CH_OK) s->current = cur;
  for (size_t i = 0; i < n; ++i) {
    ch_device d = ch_array_device(arrays[i]);
    if (d.type != s->device.type || d.index != s->device.index || !ch_array_data(arrays[i]))
      s->device_pointers = false;
  }
}

ch_status forward_any(void* u, ch_context* ctx, ch_array* const* in, size_t n, bool gpu) {
  auto* s = static_cast<Seen*>(u);
  ++(gpu ? s->forward_gpu : s->forward_cpu);
  observe(s, ctx, in, n);
  ch_array* y = nullptr;
  ch_status st = scaled_copy(ctx, in[0], &y);
  if (st != CH_OK) return st;
  st = ch_context_add_output(ctx, y);
  ch_array_release(y);
  return st;
}

ch_status backward_any(void* u, ch_context* ctx, ch_array* const* in, size_t n_in,
                       ch_array* const* gout, bool gpu) {
  auto* s = static_cast<Seen*>(u);
  ++(gpu ? s->backward_gpu : s->backward_cpu);
  observe(s, ctx, in, n_in);
  ch_array* gx = nullptr;
  ch_status st = scaled_copy(ctx, gout[0], &gx);
  if (st != CH_OK) return st;
  st = ch_context_set_grad_input(ctx, 0, gx);
  ch_array_release(gx);
  return st;
}

ch_status fwd_gpu(void* u, ch_context* c, ch_array* const* in, size_t n) {
  return forward_any(u, c, in, n, true);
}
ch_status fwd_cpu(void* u, ch_context* c, ch_array* const* in, size_t n) {
  return forward_any(u, c, in, n, false);
}
ch_status bwd_gpu(void* u, ch_context* c, ch_array* const* in, size_t n_in, ch_array* const*,
                  size_t, ch_array* const* gout, size_t) {
  return backward_any(u, c, in, n_in, gout, true);
}
ch_status bwd_cpu(void* u, ch_context* c, ch_array* const* in, size_t n_in, ch_array* const*,
                  size_t, ch_array* const* gout, size_t) {
  return backward_any(u, c, in, n_in, gout, false);
}

ch_function* make_scale3(Seen* seen) {
  ch_function_def def{};
  def.version = CH_FUNCTION_DEF_VERSION;
  def.name = "Scale3";
  def.forward_cpu = fwd_cpu;
  def.backward_cpu = bwd_cpu;
  def.forward_gpu = fwd_gpu;
  def.backward_gpu = bwd_gpu;
  def.user_data = seen;
  ch_function* f = nullptr;
  EXPECT_EQ(ch_function_new(&f, &def), CH_OK) << ch_error_message();
  return f;
}

ch_array* array_on(const std::vector<double>& v, ch_device d) {
  int64_t shape[1] = {static_cast<int64_t>(v.size())};
  ch_array* a = nullptr;
  EXPECT_EQ(ch_array_new(&a, CH_FLOAT64, shape, 1, v.data(), d), CH_OK) << ch_error_message();
  return a;
}

TEST(GpuCallbacks, ContextNamesTheDeviceAndStreamAndMakesTheDeviceCurrent) {
  const int32_t count = ch_cuda_device_count();
  if (count == 0) CH_GPU_SKIP() << "no CUDA device: " << ch_cuda_unavailable_reason();
  const int32_t dev = count > 1 ? 1 : 0;  // device 1 where there is one: not the current one
  Seen seen;
  ch_function* f = make_scale3(&seen);
  ASSERT_NE(f, nullptr);
  const std::vector<double> xv = {1.5, -2, 0.25, 7, 3};
  // Use cuda:0 first: chainerc's device guards restore a previous device only
  // where it has a context (cuda/runtime/cuda_util.h).
  ch_array* on0 = array_on({1}, ch_device_cuda(0));
  int32_t cur = -1;
  ASSERT_CH_OK(ch_cuda_current_device(&cur));
  ASSERT_EQ(cur, 0);
  ch_array* x = array_on(xv, ch_device_cuda(dev));
  ASSERT_CH_OK(ch_cuda_current_device(&cur));
  EXPECT_EQ(cur, 0) << "making an array on cuda:" << dev << " changed the current device";
  ch_variable* vx = nullptr;
  ASSERT_CH_OK(ch_variable_new(&vx, x, 0));
  ch_variable* vy = nullptr;
  ASSERT_CH_OK(ch_function_apply(f, &vx, 1, &vy, 1, nullptr));
  EXPECT_EQ(seen.forward_gpu, 1);
  EXPECT_EQ(seen.forward_cpu, 0);
  EXPECT_EQ(seen.device.type, CH_DEVICE_CUDA);
  EXPECT_EQ(seen.device.index, dev);
  // The device's engine stream, on which chainerc's kernels run.
  EXPECT_EQ(seen.stream, ch_cuda_engine_stream(dev));
  EXPECT_NE(seen.stream, nullptr);
  EXPECT_EQ(seen.current, dev);
  EXPECT_TRUE(seen.device_pointers);
  ASSERT_CH_OK(ch_cuda_current_device(&cur));
  EXPECT_EQ(cur, 0) << "the callback's device stays current after it";

  ch_array* y = nullptr;
  ASSERT_CH_OK(ch_variable_data(&y, vy));
  EXPECT_EQ(ch_array_device(y).index, dev);
  std::vector<double> yv(xv.size());
  ASSERT_CH_OK(ch_array_read(y, yv.data(), yv.size() * sizeof(double)));
  for (size_t i = 0; i < xv.size(); ++i) EXPECT_EQ(yv[i], 3 * xv[i]);

  seen = Seen{};
  const int64_t n = static_cast<int64_t>(xv.size());
  ch_array* ones = nullptr;
  ASSERT_CH_OK(ch_array_new_full(&ones, CH_FLOAT64, &n, 1, 1.0, ch_device_cuda(dev)));
  ASSERT_CH_OK(ch_variable_set_grad(vy, ones));
  ASSERT_CH_OK(ch_variable_backward(vy, 0));
  EXPECT_EQ(seen.backward_gpu, 1);
  EXPECT_EQ(seen.backward_cpu, 0);
  EXPECT_EQ(seen.device.index, dev);
  EXPECT_EQ(seen.current, dev);
  ch_array* gx = nullptr;
  ASSERT_CH_OK(ch_variable_grad(&gx, vx));
  ASSERT_NE(gx, nullptr);
  EXPECT_EQ(ch_array_device(gx).index, dev);
  std::vector<double> gv(xv.size());
  ASSERT_CH_OK(ch_array_read(gx, gv.data(), gv.size() * sizeof(double)));
  for (double g : gv) EXPECT_EQ(g, 3.0);  // the output gradient is ones
  ASSERT_CH_OK(ch_cuda_current_device(&cur));
  EXPECT_EQ(cur, 0);

  // The same function object on CPU inputs: the CPU callbacks, a CPU context.
  seen = Seen{};
  ch_array* xc = array_on(xv, ch_device_cpu());
  ch_variable* vxc = nullptr;
  ASSERT_CH_OK(ch_variable_new(&vxc, xc, 0));
  ch_variable* vyc = nullptr;
  ASSERT_CH_OK(ch_function_apply(f, &vxc, 1, &vyc, 1, nullptr));
  EXPECT_EQ(seen.forward_cpu, 1);
  EXPECT_EQ(seen.forward_gpu, 0);
  EXPECT_EQ(seen.device.type, CH_DEVICE_CPU);
  EXPECT_EQ(seen.stream, nullptr);

  // An invalid context: {0, 0} and NULL, no crash.
  EXPECT_EQ(ch_context_device(nullptr).type, 0);
  EXPECT_EQ(ch_context_stream(nullptr), nullptr);

  for (ch_variable* v : {vx, vy, vxc, vyc}) ch_variable_release(v);
  for (ch_array* a : {x, y, gx, xc, ones, on0}) ch_array_release(a);
  ch_function_release(f);
}

TEST(GpuCallbacks, CheckBackwardOfAGpuCallbackFunctionOnTheDevice) {
  if (ch_cuda_device_count() == 0) CH_GPU_SKIP() << "no CUDA device";
  Seen seen;
  ch_function* f = make_scale3(&seen);
  ASSERT_NE(f, nullptr);
  ch_array* x = array_on({0.5, -1, 2, 4, -3, 1.25, 9}, ch_device_cuda(0));
  ASSERT_CH_OK(ch_check_backward(f, &x, 1, nullptr, 0, 1e-6, 1e-8, 1e-6));
  EXPECT_GT(seen.forward_gpu, 0);
  EXPECT_GT(seen.backward_gpu, 0);
  EXPECT_EQ(seen.forward_cpu + seen.backward_cpu, 0);
  ch_array_release(x);
  ch_function_release(f);
}

// The same through the C++ API: ch::FunctionBase::context_device() and
// context_stream() inside forward_gpu()/backward_gpu().
class CopyOnDevice : public ch::FunctionBase {
 public:
  CopyOnDevice() : FunctionBase("CopyOnDevice") {}
  ch_device seen{0, 0};
  void* stream = reinterpret_cast<void*>(1);
  int32_t current = -1;
  int gpu_calls = 0;

  std::vector<ch::Array> forward_gpu(const std::vector<ch::Array>& in) override {
    ++gpu_calls;
    seen = context_device();
    stream = context_stream();
    ch_cuda_current_device(&current);
    return {in[0].copy()};
  }
  std::vector<ch::Array> backward_gpu(const std::vector<ch::Array>&, const std::vector<ch::Array>&,
                                      const std::vector<ch::Array>& gout) override {
    ++gpu_calls;
    return {gout[0].copy()};
  }
};

TEST(GpuCallbacks, CppFunctionBaseSeesItsDeviceAndStream) {
  const int32_t count = ch_cuda_device_count();
  if (count == 0) CH_GPU_SKIP() << "no CUDA device";
  const int32_t dev = count - 1;
  CopyOnDevice f;
  ch::Array x = ch::Array::full({3, 2}, 2.5, CH_FLOAT64, ch_device_cuda(dev));
  {
    ch::Variable v(x);
    ch::Variable y = f(v);
    EXPECT_EQ(f.gpu_calls, 1);
    EXPECT_EQ(f.seen.type, CH_DEVICE_CUDA);
    EXPECT_EQ(f.seen.index, dev);
    EXPECT_EQ(f.stream, ch_cuda_engine_stream(dev));
    EXPECT_EQ(f.current, dev);
    EXPECT_EQ(ch_array_device(y.data().get()).index, dev);
  }
  ch_array* xs[1] = {x.get()};
  ASSERT_CH_OK(ch_check_backward(f.function().get(), xs, 1, nullptr, 0, 1e-6, 1e-8, 1e-6));
  EXPECT_GT(f.gpu_calls, 2);
}

}  // namespace
