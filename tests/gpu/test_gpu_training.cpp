// Training on the GPU end to end through the C API, on the emulated devices
// in CI (suite 'gpu'): an MLP's steps on cuda:0 equal to the CPU's, the seed's
// model-parallel (section 1.3.4) and data-parallel (1.3.5) patterns on two
// devices, and an out-of-memory limit hit during a step and recovered.
#include <ch/ch.h>
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "../capi/capi_test_util.h"
#include "require_gpu.h"

namespace {

#define CH_OK_OR_THROW(call)                                                              \
  do {                                                                                    \
    ch_status st_ = (call);                                                               \
    if (st_ != CH_OK)                                                                     \
      throw std::runtime_error(std::string(#call) + " -> " + ch_status_name(st_) + ": " + \
                               ch_error_message());                                       \
  } while (0)

ch_device cpu() { return ch_device_cpu(); }
ch_device gpu(int32_t i = 0) { return ch_device_cuda(i); }

constexpr int64_t kIn = 784, kHidden = 40, kOut = 10;

// Synthetic MNIST-shaped batches: images in [0, 1) and labels in [0, 10).
struct Batch {
  std::vector<float> x;
  std::vector<int32_t> t;
  int64_t n;
};
Batch make_batch(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(0, 1);
  std::uniform_int_distribution<int32_t> label(0, kOut - 1);
  Batch b{std::vector<float>(n * kIn), std::vector<int32_t>(n), n};
  for (float& v : b.x) v = u(rng);
  for (int32_t& v : b.t) v = label(rng);
  return b;
}

// A 784-40-40-10 MLP with the same initial parameters for every seed value.
struct Mlp {
  ch_function_set* set = nullptr;
  ch_function* l[3] = {};
  Mlp() {
    const int64_t in[3] = {kIn, kHidden, kHidden}, out[3] = {kHidden, kHidden, kOut};
    const char* names[3] = {"l1", "l2", "l3"};
    CH_OK_OR_THROW(ch_function_set_new(&set));
    for (int i = 0; i < 3; ++i) {
      std::mt19937 rng(100 + i);
      std::normal_distribution<float> n(0, 1.0f / std::sqrt(static_cast<float>(in[i])));
      std::vector<float> w(in[i] * out[i]), b(out[i], 0.01f);
      for (float& v : w) v = n(rng);
      const int64_t ws[2] = {out[i], in[i]}, bs[1] = {out[i]};
      ch_array *wa = nullptr, *ba = nullptr;
      CH_OK_OR_THROW(ch_array_new(&wa, CH_FLOAT32, ws, 2, w.data(), cpu()));
      CH_OK_OR_THROW(ch_array_new(&ba, CH_FLOAT32, bs, 1, b.data(), cpu()));
      CH_OK_OR_THROW(
          ch_functions_linear_new(&l[i], in[i], out[i], CH_FLOAT32, 1.0, 0.0, 0, wa, ba));
      ch_array_release(wa);
      ch_array_release(ba);
      CH_OK_OR_THROW(ch_function_set_add_function(set, names[i], l[i]));
    }
  }
  ~Mlp() {
    for (ch_function* f : l) ch_function_release(f);
    ch_function_set_release(set);
  }
  Mlp(const Mlp&) = delete;
  Mlp& operator=(const Mlp&) = delete;
};

ch_variable* apply(ch_function* f, ch_variable* x) {
  ch_variable* y = nullptr;
  CH_OK_OR_THROW(ch_function_apply(f, &x, 1, &y, 1, nullptr));
  return y;
}

// Variables of a batch on `device` (x does not need a gradient).
void batch_vars(const Batch& b, int64_t from, int64_t n, ch_device device, ch_variable** x,
                ch_variable** t) {
  const int64_t xs[2] = {n, kIn}, ts[1] = {n};
  ch_array *xa = nullptr, *ta = nullptr;
  CH_OK_OR_THROW(ch_array_new(&xa, CH_FLOAT32, xs, 2, b.x.data() + from * kIn, device));
  CH_OK_OR_THROW(ch_array_new(&ta, CH_INT32, ts, 1, b.t.data() + from, device));
  CH_OK_OR_THROW(ch_variable_new(x, xa, 0));
  CH_OK_OR_THROW(ch_variable_new(t, ta, 0));
  CH_OK_OR_THROW(ch_variable_set_requires_grad(*x, 0));
  ch_array_release(xa);
  ch_array_release(ta);
}

// The seed's forward: relu(l1), relu(l2), l3, softmax cross entropy. With
// `devices`, layer i runs on devices[i] and the activations are copied there
// (the model-parallel pattern); the loss is on the last layer's device.
ch_variable* loss_of(const Mlp& m, ch_variable* x, ch_variable* t, const ch_device* devices) {
  ch_variable* h = ch_variable_retain(x);
  for (int i = 0; i < 3; ++i) {
    if (devices) {
      ch_variable* moved = nullptr;
      CH_OK_OR_THROW(ch_functions_copy(&moved, h, devices[i]));
      ch_variable_release(h);
      h = moved;
    }
    ch_variable* a = apply(m.l[i], h);
    ch_variable_release(h);
    if (i < 2) {
      CH_OK_OR_THROW(ch_functions_relu(&h, a));
      ch_variable_release(a);
    } else {
      h = a;
    }
  }
  ch_variable* tt = ch_variable_retain(t);
  if (devices) {
    ch_variable* moved = nullptr;
    CH_OK_OR_THROW(ch_functions_copy(&moved, t, devices[2]));
    ch_variable_release(tt);
    tt = moved;
  }
  ch_variable* loss = nullptr;
  CH_OK_OR_THROW(ch_functions_softmax_cross_entropy(&loss, h, tt));
  ch_variable_release(h);
  ch_variable_release(tt);
  return loss;
}

double value_of(ch_variable* v) {
  ch_array* a = nullptr;
  CH_OK_OR_THROW(ch_variable_data(&a, v));
  double d = 0;
  CH_OK_OR_THROW(ch_array_get(&d, a, 0));
  ch_array_release(a);
  return d;
}

// Every parameter (or gradient) of the set, read to the host.
std::vector<std::vector<float>> values(const Mlp& m, bool grads) {
  std::vector<std::vector<float>> out;
  for (size_t i = 0, n = ch_function_set_parameter_count(m.set); i < n; ++i) {
    ch_array *p = nullptr, *g = nullptr;
    CH_OK_OR_THROW(ch_function_set_parameter(&p, &g, nullptr, m.set, i));
    ch_array* a = grads ? g : p;
    std::vector<float> v(ch_array_size(a));
    CH_OK_OR_THROW(ch_array_read(a, v.data(), v.size() * sizeof(float)));
    out.push_back(v);
    ch_array_release(p);
    ch_array_release(g);
  }
  return out;
}

void expect_close(const std::vector<std::vector<float>>& a,
                  const std::vector<std::vector<float>>& b, double tol, const char* what) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(a[i].size(), b[i].size());
    double worst = 0;
    size_t at = 0;
    for (size_t k = 0; k < a[i].size(); ++k) {
      const double d = std::fabs(a[i][k] - b[i][k]) / (tol + std::fabs(b[i][k]));
      if (d > worst) worst = d, at = k;
    }
    EXPECT_LE(worst, 1.0) << what << " " << i << " differs at " << at << ": " << a[i][at] << " vs "
                          << b[i][at];
  }
}

// `steps` SGD-with-momentum steps of batch 64 on `device`; the final
// parameters and the losses.
std::vector<std::vector<float>> train(ch_device device, int steps, std::vector<double>* losses) {
  Mlp m;
  if (device.type != CH_DEVICE_CPU) CH_OK_OR_THROW(ch_function_set_to_gpu(m.set, device));
  ch_optimizer* opt = nullptr;
  CH_OK_OR_THROW(ch_optimizer_momentum_sgd_new(&opt, 0.1, 0.9));
  CH_OK_OR_THROW(ch_optimizer_setup(opt, m.set));
  for (int s = 0; s < steps; ++s) {
    const Batch b = make_batch(64, 7 + s);
    ch_variable *x = nullptr, *t = nullptr;
    batch_vars(b, 0, b.n, device, &x, &t);
    CH_OK_OR_THROW(ch_optimizer_zero_grads(opt));
    ch_variable* loss = loss_of(m, x, t, nullptr);
    CH_OK_OR_THROW(ch_variable_backward(loss, 0));
    CH_OK_OR_THROW(ch_optimizer_update(opt));
    if (losses) losses->push_back(value_of(loss));
    for (ch_variable* v : {loss, x, t}) ch_variable_release(v);
  }
  ch_optimizer_release(opt);
  return values(m, false);
}

class GpuTraining : public ::testing::Test {
 protected:
  void SetUp() override {
    if (ch_cuda_device_count() == 0)
      CH_GPU_SKIP() << "no CUDA device: " << ch_cuda_unavailable_reason();
  }
  void TearDown() override {
    if (ch_cuda_device_count() > 0) ch_memory_set_limit(gpu(), 0);
  }
};

TEST_F(GpuTraining, TenMlpStepsOnCuda0EqualTheCpus) {
  std::vector<double> cpu_losses, gpu_losses;
  std::vector<std::vector<float>> on_cpu, on_gpu;
  try {
    on_cpu = train(cpu(), 10, &cpu_losses);
    on_gpu = train(gpu(), 10, &gpu_losses);
  } catch (const std::exception& e) {
    FAIL() << e.what();
  }
  ASSERT_EQ(gpu_losses.size(), 10u);
  for (int s = 0; s < 10; ++s) EXPECT_NEAR(gpu_losses[s], cpu_losses[s], 1e-4) << "step " << s;
  EXPECT_LT(cpu_losses.back(), cpu_losses.front()) << "the MLP did not learn";
  expect_close(on_gpu, on_cpu, 1e-3, "parameter");
}

// The allocator's steady state over a training loop (forward, backward,
// optimizer update): after warm-up no step reaches cudaMalloc and none leaves
// memory behind.
TEST_F(GpuTraining, AllocatorSteadyStateOverATrainingLoop) {
  try {
    Mlp m;
    CH_OK_OR_THROW(ch_function_set_to_gpu(m.set, gpu()));
    ch_optimizer* opt = nullptr;
    CH_OK_OR_THROW(ch_optimizer_adam_new(&opt, 0.001, 0.9, 0.999, 1.0 - 1e-8, 1e-8));
    CH_OK_OR_THROW(ch_optimizer_setup(opt, m.set));
    const Batch b = make_batch(64, 11);
    auto step = [&] {
      ch_variable *x = nullptr, *t = nullptr;
      batch_vars(b, 0, b.n, gpu(), &x, &t);
      CH_OK_OR_THROW(ch_optimizer_zero_grads(opt));
      ch_variable* loss = loss_of(m, x, t, nullptr);
      CH_OK_OR_THROW(ch_variable_backward(loss, 0));
      CH_OK_OR_THROW(ch_optimizer_update(opt));
      for (ch_variable* v : {loss, x, t}) ch_variable_release(v);
    };
    for (int i = 0; i < 3; ++i) step();
    ch_memory_stats warm{}, after{};
    CH_OK_OR_THROW(ch_memory_stats_get(&warm, gpu()));
    for (int i = 0; i < 20; ++i) step();
    CH_OK_OR_THROW(ch_memory_stats_get(&after, gpu()));
    EXPECT_EQ(after.cache_misses, warm.cache_misses) << "cudaMalloc after warm-up";
    EXPECT_EQ(after.bytes_in_use, warm.bytes_in_use) << "a step left device memory behind";
    EXPECT_GT(after.allocations, warm.allocations);
    ch_optimizer_release(opt);
  } catch (const std::exception& e) {
    FAIL() << e.what();
  }
}

// With the determinism switch on, two identical runs give bit-identical
// parameters (with convolutions of cuDNN limited to its deterministic
// algorithms on a GPU; chainerc's own kernels are deterministic anyway).
TEST_F(GpuTraining, DeterministicRunsAreBitIdentical) {
  ch_config_set_deterministic(1);
  EXPECT_EQ(ch_config_deterministic(), 1);
  std::vector<std::vector<float>> a, b;
  try {
    a = train(gpu(), 4, nullptr);
    b = train(gpu(), 4, nullptr);
  } catch (const std::exception& e) {
    ch_config_set_deterministic(0);
    FAIL() << e.what();
  }
  ch_config_set_deterministic(0);
  EXPECT_EQ(ch_config_deterministic(), 0);
  EXPECT_EQ(a, b);
}

// Section 1.3.4: layer 1 on cuda:0, layers 2 and 3 on cuda:1, the activations
// crossing by F.copy; the gradients equal those of the model on the CPU.
TEST_F(GpuTraining, ModelParallelOverTwoDevices) {
  if (!ch_gpu_test::two_cuda_devices()) CH_GPU_SKIP_NEEDS_TWO() << "needs two CUDA devices";
  try {
    const Batch b = make_batch(32, 3);
    Mlp on_cpu, split;
    // Each layer's parameters on the device where it runs.
    for (int i = 0; i < 3; ++i) {
      ch_function_set* one = nullptr;
      CH_OK_OR_THROW(ch_function_set_new(&one));
      CH_OK_OR_THROW(ch_function_set_add_function(one, "l", split.l[i]));
      CH_OK_OR_THROW(ch_function_set_to_gpu(one, gpu(i == 0 ? 0 : 1)));
      ch_function_set_release(one);
    }
    const ch_device devices[3] = {gpu(0), gpu(1), gpu(1)};
    ch_variable *x = nullptr, *t = nullptr, *xc = nullptr, *tc = nullptr;
    batch_vars(b, 0, b.n, gpu(0), &x, &t);
    batch_vars(b, 0, b.n, cpu(), &xc, &tc);
    ch_variable* loss = loss_of(split, x, t, devices);
    ch_variable* loss_cpu = loss_of(on_cpu, xc, tc, nullptr);
    CH_OK_OR_THROW(ch_variable_backward(loss, 0));
    CH_OK_OR_THROW(ch_variable_backward(loss_cpu, 0));
    EXPECT_NEAR(value_of(loss), value_of(loss_cpu), 1e-5);
    expect_close(values(split, true), values(on_cpu, true), 1e-4, "gradient");
    for (ch_variable* v : {loss, loss_cpu, x, t, xc, tc}) ch_variable_release(v);
  } catch (const std::exception& e) {
    FAIL() << e.what();
  }
}

// Section 1.3.5: a replica on each device, half the batch each, the second
// replica's gradients accumulated into the first's, one update, and the
// parameters copied back: equal to the same two halves on the CPU.
TEST_F(GpuTraining, DataParallelOverTwoDevices) {
  if (!ch_gpu_test::two_cuda_devices()) CH_GPU_SKIP_NEEDS_TWO() << "needs two CUDA devices";
  try {
    const Batch b = make_batch(64, 5);
    auto run = [&](ch_device d0, ch_device d1) {
      Mlp m0, m1;
      CH_OK_OR_THROW(ch_function_set_to_gpu(m0.set, d0));
      CH_OK_OR_THROW(ch_function_set_to_gpu(m1.set, d1));
      ch_optimizer* opt = nullptr;
      CH_OK_OR_THROW(ch_optimizer_sgd_new(&opt, 0.1));
      CH_OK_OR_THROW(ch_optimizer_setup(opt, m0.set));
      for (int step = 0; step < 3; ++step) {
        CH_OK_OR_THROW(ch_function_set_copy_parameters_from(m1.set, m0.set));
        CH_OK_OR_THROW(ch_optimizer_zero_grads(opt));
        std::vector<ch_array*> grads1;
        for (size_t i = 0, n = ch_function_set_parameter_count(m1.set); i < n; ++i) {
          ch_array* g = nullptr;
          CH_OK_OR_THROW(ch_function_set_parameter(nullptr, &g, nullptr, m1.set, i));
          CH_OK_OR_THROW(ch_array_fill(g, 0.0));
          grads1.push_back(g);
        }
        ch_variable *x0, *t0, *x1, *t1;
        batch_vars(b, 0, 32, d0, &x0, &t0);
        batch_vars(b, 32, 32, d1, &x1, &t1);
        ch_variable* l0 = loss_of(m0, x0, t0, nullptr);
        ch_variable* l1 = loss_of(m1, x1, t1, nullptr);
        CH_OK_OR_THROW(ch_variable_backward(l0, 0));
        CH_OK_OR_THROW(ch_variable_backward(l1, 0));
        CH_OK_OR_THROW(ch_optimizer_accumulate_grads(opt, grads1.data(), grads1.size()));
        CH_OK_OR_THROW(ch_optimizer_update(opt));
        for (ch_array* g : grads1) ch_array_release(g);
        for (ch_variable* v : {l0, l1, x0, t0, x1, t1}) ch_variable_release(v);
      }
      ch_optimizer_release(opt);
      return values(m0, false);
    };
    expect_close(run(gpu(0), gpu(1)), run(cpu(), cpu()), 1e-3, "parameter");
  } catch (const std::exception& e) {
    FAIL() << e.what();
  }
}

// A memory limit too small for a step fails it with CH_ERR_OUT_OF_MEMORY; with
// the limit lifted the same model trains on and matches the CPU.
TEST_F(GpuTraining, OutOfMemoryDuringAStepIsRecovered) {
  try {
    Mlp m;
    CH_OK_OR_THROW(ch_function_set_to_gpu(m.set, gpu()));
    ch_optimizer* opt = nullptr;
    CH_OK_OR_THROW(ch_optimizer_sgd_new(&opt, 0.1));
    CH_OK_OR_THROW(ch_optimizer_setup(opt, m.set));
    const Batch b = make_batch(64, 9);
    // A large batch already on the device; then no room beyond what the
    // allocator holds: the step's activations (megabytes) do not fit.
    const Batch big = make_batch(8192, 10);
    ch_variable *bx = nullptr, *bt = nullptr;
    batch_vars(big, 0, big.n, gpu(), &bx, &bt);
    ch_memory_stats s{};
    CH_OK_OR_THROW(ch_memory_empty_cache(gpu()));
    CH_OK_OR_THROW(ch_memory_stats_get(&s, gpu()));
    ASSERT_CH_OK(ch_memory_set_limit(gpu(), static_cast<size_t>(s.bytes_in_use + s.bytes_cached)));
    ch_status failed = CH_OK;
    try {
      ch_variable* loss = loss_of(m, bx, bt, nullptr);
      failed = ch_variable_backward(loss, 0);
      ch_variable_release(loss);
    } catch (const std::runtime_error& e) {
      const std::string what = e.what();
      if (what.find("CH_ERR_OUT_OF_MEMORY") != std::string::npos) failed = CH_ERR_OUT_OF_MEMORY;
      EXPECT_NE(what.find("cuda:0"), std::string::npos) << what;
      EXPECT_EQ(failed, CH_ERR_OUT_OF_MEMORY) << what;
    }
    ch_variable_release(bx);
    ch_variable_release(bt);
    EXPECT_EQ(failed, CH_ERR_OUT_OF_MEMORY) << ch_error_message();
    ASSERT_CH_OK(ch_memory_set_limit(gpu(), 0));
    ch_variable *x = nullptr, *t = nullptr;
    batch_vars(b, 0, b.n, gpu(), &x, &t);
    CH_OK_OR_THROW(ch_optimizer_zero_grads(opt));
    ch_variable* loss = loss_of(m, x, t, nullptr);
    ASSERT_CH_OK(ch_variable_backward(loss, 0));
    ASSERT_CH_OK(ch_optimizer_update(opt));
    EXPECT_TRUE(std::isfinite(value_of(loss)));
    for (ch_variable* v : {loss, x, t}) ch_variable_release(v);
    ch_optimizer_release(opt);
  } catch (const std::exception& e) {
    FAIL() << e.what();
  }
}

}  // namespace
