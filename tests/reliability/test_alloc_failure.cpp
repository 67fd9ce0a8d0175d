// Allocation-failure injection (SQLite's anchor: every allocation may fail).
// Each scenario - a training step of a small MLP with Adam, a save/load of
// model and optimizer, and a backward through a user-defined function - runs
// with its n-th allocation failing, for every n up to the number of
// allocations it makes:
//   * "host": the library's array allocator (chainerc::testing::
//     fail_allocation_after, src/core/allocator.cpp);
//   * "new": every C++ allocation (operator new, replaced in this program).
// Every run must return CH_OK or CH_ERR_OUT_OF_MEMORY (never crash), release
// every handle it made (live-handle counts back to the baseline; the sanitizer
// pass adds LeakSanitizer for memory), and the same scenario run right after,
// without failures, must succeed with the reference result.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <new>
#include <string>
#include <vector>

#include "capi_test_util.h"
#include "core/allocator.h"

using namespace capi_test;

// ---- operator new that fails on request ----------------------------------------
namespace {
std::atomic<long long> g_new_fail_at{0};  // 0 = off
std::atomic<long long> g_new_counted{0};
}  // namespace

// noinline: inlined into new-expressions, GCC would take std::free for a
// mismatched deallocation (-Wmismatched-new-delete).
__attribute__((noinline)) void* operator new(std::size_t n) {
  if (g_new_fail_at.load(std::memory_order_relaxed) > 0 &&
      g_new_counted.fetch_add(1) + 1 == g_new_fail_at.load())
    throw std::bad_alloc();
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
__attribute__((noinline)) void operator delete(void* p) noexcept { std::free(p); }
__attribute__((noinline)) void operator delete(void* p, std::size_t) noexcept { std::free(p); }

namespace {

using FnSet = Ref<ch_function_set, ch_function_set_release>;
using Opt = Ref<ch_optimizer, ch_optimizer_release>;

// Runs `body`, stopping at the first failing status (returned).
#define TRY(call)                 \
  do {                            \
    ch_status st_ = (call);       \
    if (st_ != CH_OK) return st_; \
  } while (0)

// A model Linear(4, 3) -> relu -> Linear(3, 2) with fixed weights, Adam, and
// one step on a fixed batch; *loss gets the loss before the update and
// *after the first weight after it.
ch_status train_step(double* loss, double* after) {
  FnSet set;
  TRY(ch_function_set_new(set.out()));
  float w1[12], w2[6];
  for (int i = 0; i < 12; ++i) w1[i] = 0.1f * static_cast<float>(i) - 0.5f;
  for (int i = 0; i < 6; ++i) w2[i] = 0.2f * static_cast<float>(i) - 0.4f;
  Arr W1, W2;
  const int64_t s1[] = {3, 4}, s2[] = {2, 3};
  TRY(ch_array_new(W1.out(), CH_FLOAT32, s1, 2, w1, ch_device_cpu()));
  TRY(ch_array_new(W2.out(), CH_FLOAT32, s2, 2, w2, ch_device_cpu()));
  Fn l1, l2;
  TRY(ch_functions_linear_new(l1.out(), 4, 3, CH_FLOAT32, 1, 0, 0, W1, nullptr));
  TRY(ch_functions_linear_new(l2.out(), 3, 2, CH_FLOAT32, 1, 0, 0, W2, nullptr));
  TRY(ch_function_set_add_function(set, "l1", l1));
  TRY(ch_function_set_add_function(set, "l2", l2));
  Opt adam;
  TRY(ch_optimizer_adam_new(adam.out(), 0.01, 0.9, 0.999, 1, 1e-8));
  TRY(ch_optimizer_setup(adam, set));
  Arr xa, ta;
  const int64_t xs[] = {5, 4}, ts[] = {5, 2};
  TRY(ch_array_new_full(xa.out(), CH_FLOAT32, xs, 2, 0.5, ch_device_cpu()));
  TRY(ch_array_new_full(ta.out(), CH_FLOAT32, ts, 2, 0.25, ch_device_cpu()));
  Var x, t, h, r, y, l;
  TRY(ch_variable_new(x.out(), xa, 0));
  TRY(ch_variable_new(t.out(), ta, 0));
  size_t n = 0;
  ch_variable* hv = nullptr;
  ch_variable* xin = x;
  TRY(ch_function_apply(l1, &xin, 1, &hv, 1, &n));
  h.reset(hv);
  TRY(ch_functions_relu(r.out(), h));
  ch_variable* rin = r;
  ch_variable* yv = nullptr;
  TRY(ch_function_apply(l2, &rin, 1, &yv, 1, &n));
  y.reset(yv);
  TRY(ch_functions_mean_squared_error(l.out(), y, t));
  TRY(ch_optimizer_zero_grads(adam));
  TRY(ch_variable_backward(l, 0));
  TRY(ch_optimizer_update(adam));
  Arr ld;
  TRY(ch_variable_data(ld.out(), l));
  TRY(ch_array_get(loss, ld, 0));
  TRY(ch_array_get(after, W1, 0));
  return CH_OK;
}

// Saves a model and an Adam state after one step, loads both into fresh ones.
ch_status save_load(const std::string& model, const std::string& state, double* loss,
                    double* after) {
  FnSet set;
  TRY(ch_function_set_new(set.out()));
  Fn l1;
  Arr W;
  const int64_t ws[] = {2, 3};
  TRY(ch_array_new_full(W.out(), CH_FLOAT64, ws, 2, 0.75, ch_device_cpu()));
  TRY(ch_functions_linear_new(l1.out(), 3, 2, CH_FLOAT64, 1, 0, 0, W, nullptr));
  TRY(ch_function_set_add_function(set, "l1", l1));
  Opt adam;
  TRY(ch_optimizer_adam_new(adam.out(), 0.01, 0.9, 0.999, 1, 1e-8));
  TRY(ch_optimizer_setup(adam, set));
  Arr g;
  TRY(ch_function_set_parameter(nullptr, g.out(), nullptr, set, 0));
  TRY(ch_array_fill(g, 0.5));
  TRY(ch_optimizer_update(adam));
  TRY(ch_function_set_save_npz(set, model.c_str(), CH_NPZ_COMPRESSED));
  TRY(ch_optimizer_save_npz(adam, state.c_str(), CH_NPZ_STORED));
  FnSet set2;
  TRY(ch_function_set_new(set2.out()));
  Fn l2;
  TRY(ch_functions_linear_new(l2.out(), 3, 2, CH_FLOAT64, 1, 0, 0, nullptr, nullptr));
  TRY(ch_function_set_add_function(set2, "l1", l2));
  Opt adam2;
  TRY(ch_optimizer_adam_new(adam2.out(), 0.01, 0.9, 0.999, 1, 1e-8));
  TRY(ch_optimizer_setup(adam2, set2));
  TRY(ch_function_set_load_npz(set2, model.c_str()));
  TRY(ch_optimizer_load_npz(adam2, state.c_str()));
  Arr p2, g2;
  TRY(ch_function_set_parameter(p2.out(), g2.out(), nullptr, set2, 0));
  TRY(ch_array_fill(g2, 0.5));
  TRY(ch_optimizer_update(adam2));
  *loss = static_cast<double>(ch_optimizer_t(adam2));
  TRY(ch_array_get(after, p2, 0));
  return CH_OK;
}

// y = twice(x) by a user function (forward 2x, backward 2gy), then sum and backward.
ch_status twice_forward(void*, ch_context* ctx, ch_array* const* in, size_t) {
  Arr y;
  TRY(ch_array_copy(y.out(), in[0]));
  double* p = static_cast<double*>(ch_array_data(y));
  for (int64_t i = 0; i < ch_array_size(y); ++i) p[i] *= 2;
  return ch_context_add_output(ctx, y);
}
ch_status twice_backward(void*, ch_context* ctx, ch_array* const*, size_t, ch_array* const*, size_t,
                         ch_array* const* gy, size_t) {
  Arr gx;
  TRY(ch_array_copy(gx.out(), gy[0]));
  double* p = static_cast<double*>(ch_array_data(gx));
  for (int64_t i = 0; i < ch_array_size(gx); ++i) p[i] *= 2;
  return ch_context_set_grad_input(ctx, 0, gx);
}

ch_status custom_backward(double* loss, double* grad) {
  ch_function_def def = {};
  def.version = CH_FUNCTION_DEF_VERSION;
  def.name = "twice";
  def.forward = twice_forward;
  def.backward = twice_backward;
  Fn f;
  TRY(ch_function_new(f.out(), &def));
  Arr xa;
  const int64_t xs[] = {3};
  TRY(ch_array_new_full(xa.out(), CH_FLOAT64, xs, 1, 1.5, ch_device_cpu()));
  Var x, y, z, s;
  TRY(ch_variable_new(x.out(), xa, 0));
  ch_variable* xin = x;
  ch_variable* yv = nullptr;
  size_t n = 0;
  TRY(ch_function_apply(f, &xin, 1, &yv, 1, &n));
  y.reset(yv);
  TRY(ch_functions_mul(z.out(), y, y));  // z = 4 x^2
  TRY(ch_functions_sum(s.out(), z));
  TRY(ch_variable_backward(s, 0));
  Arr sd, g;
  TRY(ch_variable_data(sd.out(), s));
  TRY(ch_array_get(loss, sd, 0));
  TRY(ch_variable_grad(g.out(), x));
  if (!g) return CH_ERR_INTERNAL;
  TRY(ch_array_get(grad, g, 0));
  return CH_OK;
}

enum class Injector { Host, New };

void arm(Injector which, long long n) {
  if (which == Injector::Host) {
    chainerc::testing::fail_allocation_after(n);
  } else {
    g_new_counted.store(0);
    g_new_fail_at.store(n);
  }
}
long long disarm(Injector which) {
  if (which == Injector::Host) {
    long long c = chainerc::testing::host_allocations_counted();
    chainerc::testing::fail_allocation_after(0);
    return c;
  }
  g_new_fail_at.store(0);
  return g_new_counted.load();
}

class AllocationFailure : public CapiTest {
 protected:
  void SetUp() override {
    CapiTest::SetUp();
    // One thread: the allocation order is then the same in every run.
    threads_ = ch_config_num_threads();
    ASSERT_EQ(ch_config_set_num_threads(1), CH_OK);
    char tmpl[] = "/tmp/ch_alloc_failure_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    model_ = dir_ + "/model.npz";
    state_ = dir_ + "/adam.npz";
  }
  void TearDown() override {
    std::remove(model_.c_str());
    std::remove(state_.c_str());
    rmdir(dir_.c_str());
    ch_config_set_num_threads(threads_);
    CapiTest::TearDown();
  }

  // Fails the n-th allocation for n = 1, 2, ... until a run makes fewer than
  // n allocations; returns how many allocations were failed.
  long long run_all(Injector which, const std::function<ch_status(double*, double*)>& scenario) {
    double ref_a = 0, ref_b = 0;
    EXPECT_EQ(scenario(&ref_a, &ref_b), CH_OK) << ch_error_message();
    const int64_t handles = ch_debug_live_handles();
    long long failed = 0;
    for (long long n = 1; n < 100000; ++n) {
      double a = 0, b = 0;
      arm(which, n);
      ch_status st = scenario(&a, &b);
      const long long counted = disarm(which);
      if (counted < n) {  // no allocation failed: every one has been tried
        EXPECT_EQ(st, CH_OK) << ch_error_message();
        break;
      }
      ++failed;
      SCOPED_TRACE("allocation " + std::to_string(n) + " of " + std::to_string(counted));
      // A user callback that runs out of memory fails, and the engine reports
      // that as CH_ERR_CALLBACK with the callback's message (include/ch/function.h).
      const bool oom_in_callback = st == CH_ERR_CALLBACK && contains(ch_error_message(), "out of");
      EXPECT_TRUE(st == CH_OK || st == CH_ERR_OUT_OF_MEMORY || oom_in_callback)
          << ch_status_name(st) << ": " << ch_error_message();
      if (st == CH_ERR_OUT_OF_MEMORY) {
        EXPECT_STRNE(ch_error_message(), "");
      }
      EXPECT_EQ(ch_debug_live_handles(), handles) << "a failed run left handles alive";
      // Failures stopped: the same scenario succeeds with the reference result.
      double a2 = 0, b2 = 0;
      EXPECT_EQ(scenario(&a2, &b2), CH_OK) << ch_error_message();
      EXPECT_EQ(a2, ref_a);
      EXPECT_EQ(b2, ref_b);
      if (::testing::Test::HasFailure()) break;  // one report, not thousands
    }
    std::printf("[ alloc   ] %s: %lld allocations failed one at a time\n",
                which == Injector::Host ? "host allocator" : "operator new", failed);
    return failed;
  }

  int32_t threads_ = 1;
  std::string dir_, model_, state_;
};

TEST_F(AllocationFailure, TrainingStepHostAllocator) {
  EXPECT_GT(run_all(Injector::Host, train_step), 10);
}
TEST_F(AllocationFailure, TrainingStepOperatorNew) {
  EXPECT_GT(run_all(Injector::New, train_step), 10);
}
TEST_F(AllocationFailure, SaveLoadHostAllocator) {
  EXPECT_GT(run_all(Injector::Host,
                    [this](double* a, double* b) { return save_load(model_, state_, a, b); }),
            5);
}
TEST_F(AllocationFailure, SaveLoadOperatorNew) {
  EXPECT_GT(run_all(Injector::New,
                    [this](double* a, double* b) { return save_load(model_, state_, a, b); }),
            5);
}
TEST_F(AllocationFailure, CustomFunctionBackwardHostAllocator) {
  EXPECT_GT(run_all(Injector::Host, custom_backward), 3);
}
TEST_F(AllocationFailure, CustomFunctionBackwardOperatorNew) {
  EXPECT_GT(run_all(Injector::New, custom_backward), 3);
}

}  // namespace
