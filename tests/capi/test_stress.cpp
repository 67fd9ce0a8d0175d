// Deep graphs: backward, unchain and destruction must be iterative
// (variable.h: "Backward and graph destruction are iterative, so graphs of
// any depth are safe"). The chains run on a thread with a deliberately small
// stack (256 KiB), so any recursion per node would overflow it.
#include <pthread.h>

#include <chrono>
#include <functional>

#include "user_functions.h"

using namespace capi_test;

namespace {

class Stress : public CapiTest {};

constexpr size_t kSmallStack = 256 * 1024;

// Run `fn` on a new thread with a small stack and wait for it.
void run_with_small_stack(std::function<void()> fn) {
  pthread_attr_t attr;
  ASSERT_EQ(pthread_attr_init(&attr), 0);
  ASSERT_EQ(pthread_attr_setstacksize(&attr, kSmallStack), 0);
  pthread_t tid;
  auto trampoline = [](void* p) -> void* {
    (*static_cast<std::function<void()>*>(p))();
    return nullptr;
  };
  ASSERT_EQ(pthread_create(&tid, &attr, trampoline, &fn), 0);
  pthread_attr_destroy(&attr);
  ASSERT_EQ(pthread_join(tid, nullptr), 0);
}

// Results are collected in plain fields and asserted on the main thread.
struct ChainResult {
  ch_status status = CH_OK;
  std::string where, message;
  double y = 0, grad = 0;
  bool grad_present = false;
  double seconds_forward = 0, seconds_backward = 0, seconds_release = 0;
  void fail(const char* what, ch_status st) {
    if (status != CH_OK) return;
    status = st;
    where = what;
    message = ch_error_message();
  }
};

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

TEST_F(Stress, MillionNodeChain) {
  // x = 5 (float32); y = ((x + 1) + 1 ... ) * 2 with 999,999 AddScalar nodes
  // and one MulScalar: y = 2 * (5 + 999,999) = 2,000,008 (exact in float32,
  // below 2^24); dy/dx = 2 (hand-derived). Each intermediate handle is
  // released at once, so only the graph holds the nodes.
  constexpr int kOps = 1000000;
  ChainResult r;
  run_with_small_stack([&r] {
    float five = 5.0f;
    int64_t shape[] = {1};
    ch_array* xa = nullptr;
    ch_variable* x = nullptr;
    ch_status st = ch_array_new(&xa, CH_FLOAT32, shape, 1, &five, ch_device_cpu());
    if (st != CH_OK) return r.fail("ch_array_new", st);
    st = ch_variable_new(&x, xa, 0);
    ch_array_release(xa);
    if (st != CH_OK) return r.fail("ch_variable_new", st);

    auto t0 = std::chrono::steady_clock::now();
    ch_variable* cur = ch_variable_retain(x);
    for (int i = 0; i < kOps; ++i) {
      ch_variable* next = nullptr;
      st = i == kOps - 1 ? ch_functions_mul_scalar(&next, cur, 2.0)
                         : ch_functions_add_scalar(&next, cur, 1.0);
      ch_variable_release(cur);
      if (st != CH_OK) {
        ch_variable_release(x);
        return r.fail("op", st);
      }
      cur = next;
    }
    r.seconds_forward = seconds_since(t0);

    t0 = std::chrono::steady_clock::now();
    st = ch_variable_backward(cur, 0);
    r.seconds_backward = seconds_since(t0);
    if (st != CH_OK) r.fail("ch_variable_backward", st);
    ch_array *yd = nullptr, *g = nullptr;
    if (ch_variable_data(&yd, cur) == CH_OK) ch_array_get(&r.y, yd, 0);
    ch_array_release(yd);
    if (ch_variable_grad(&g, x) == CH_OK && g) {
      r.grad_present = true;
      ch_array_get(&r.grad, g, 0);
    }
    ch_array_release(g);

    t0 = std::chrono::steady_clock::now();
    ch_variable_release(cur);  // frees a million nodes on this small stack
    r.seconds_release = seconds_since(t0);
    ch_variable_release(x);
  });
  ASSERT_EQ(r.status, CH_OK) << r.where << ": " << r.message;
  EXPECT_EQ(r.y, 2000008.0);
  EXPECT_TRUE(r.grad_present);
  EXPECT_EQ(r.grad, 2.0);
  std::printf(
      "[          ] 1,000,000-node chain: forward %.2f s, backward %.2f s, release %.2f s\n",
      r.seconds_forward, r.seconds_backward, r.seconds_release);
}

TEST_F(Stress, DeepChainUnchainAndReleaseFromRoot) {
  // A 100,000-node chain of user-callback nodes: unchain_backward from the
  // end (iterative), then drop the handles root first.
  constexpr int kOps = 100000;
  Probe probe;
  ChainResult r;
  run_with_small_stack([&] {
    Fn f = make_muladd(&probe);  // w = x * one + zero
    ch_variable* one = var_f32({1}, {1}).release();
    ch_variable* zero = var_f32({1}, {0}).release();
    ch_variable* x = var_f32({1}, {3}).release();
    ch_variable* cur = ch_variable_retain(x);
    for (int i = 0; i < kOps; ++i) {
      ch_variable* in[] = {cur, one, zero};
      ch_variable* next = nullptr;
      ch_status st = ch_function_apply(f, in, 3, &next, 1, nullptr);
      ch_variable_release(cur);
      cur = next;
      if (st != CH_OK) return r.fail("ch_function_apply", st);
    }
    ch_status st = ch_variable_backward(cur, 0);
    if (st != CH_OK) r.fail("ch_variable_backward", st);
    ch_array* g = nullptr;
    if (ch_variable_grad(&g, x) == CH_OK && g) {
      r.grad_present = true;
      ch_array_get(&r.grad, g, 0);
    }
    ch_array_release(g);
    st = ch_variable_unchain_backward(cur);
    if (st != CH_OK) r.fail("ch_variable_unchain_backward", st);
    ch_function* creator = nullptr;
    ch_variable_creator(&creator, cur);
    if (creator) r.fail("creator after unchain", CH_ERR_INTERNAL);
    ch_function_release(creator);
    for (ch_variable* v : {x, one, zero, cur}) ch_variable_release(v);
  });
  ASSERT_EQ(r.status, CH_OK) << r.where << ": " << r.message;
  EXPECT_TRUE(r.grad_present);
  EXPECT_EQ(r.grad, 1.0);  // d/dx of x * 1 * 1 ... (hand-derived)
  EXPECT_EQ(probe.forward_calls.load(), kOps);
  EXPECT_EQ(probe.backward_calls.load(), kOps);
  EXPECT_EQ(probe.destroyed.load(), 1);
}

TEST_F(Stress, DeepChainReleasedRootFirst) {
  // Release the root input's handle before the chain's end: the graph keeps
  // it; then the final release frees everything iteratively.
  constexpr int kOps = 100000;
  const int64_t arrays0 = ch_debug_live_arrays();
  ChainResult r;
  run_with_small_stack([&] {
    ch_variable* x = var_f64({1}, {1}).release();
    ch_variable* cur = ch_variable_retain(x);
    ch_variable_release(x);
    for (int i = 0; i < kOps; ++i) {
      ch_variable* next = nullptr;
      ch_status st = ch_functions_neg(&next, cur);
      ch_variable_release(cur);
      cur = next;
      if (st != CH_OK) return r.fail("ch_functions_neg", st);
    }
    ch_array* d = nullptr;
    if (ch_variable_data(&d, cur) == CH_OK) ch_array_get(&r.y, d, 0);
    ch_array_release(d);
    ch_variable_release(cur);
  });
  ASSERT_EQ(r.status, CH_OK) << r.where << ": " << r.message;
  EXPECT_EQ(r.y, 1.0);  // an even number of negations
  EXPECT_EQ(ch_debug_live_arrays(), arrays0);
}

}  // namespace
