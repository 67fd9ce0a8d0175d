// User-defined functions written against the C callback API, as a host
// language binding would write them: the seed's MulAdd (w = x*y + z), ExpAdd
// (z = exp(x) + exp(y)) and EltwiseParamProduct (y = w*x with a parameter w
// and its gradient gw). Every callback counts its calls in a Probe (the
// function's user_data), so tests can see which slot ran, on which thread,
// and when the user data was destroyed.
#pragma once

#include <atomic>
#include <functional>
#include <mutex>
#include <thread>

#include "capi_test_util.h"

namespace capi_test {

struct Probe {
  std::atomic<int> forward_calls{0};
  std::atomic<int> backward_calls{0};
  std::atomic<int> destroyed{0};  // times the def's destroy ran (must end at exactly 1)
  std::mutex mutex;
  std::thread::id forward_thread;   // thread of the last forward call
  std::thread::id backward_thread;  // thread of the last backward call
  // When set, backward computes a wrong gradient for input 0 (times 3).
  std::atomic<bool> wrong_backward{false};
};

void probe_destroy(void* user_data);  // increments Probe::destroyed

// Which callback slots of ch_function_def a test function fills.
enum class Slots { Generic, Cpu, Both };

// MulAdd: w = x * y + z (float32 or float64, same shapes).
// With Slots::Both, `forward`/`backward` are set to callbacks that fail, so a
// test proves the engine prefers forward_cpu/backward_cpu for CPU inputs.
Fn make_muladd(Probe* probe, Slots slots = Slots::Generic);
// ExpAdd: z = exp(x) + exp(y).
Fn make_expadd(Probe* probe, Slots slots = Slots::Generic);
// EltwiseParamProduct (seed 1.4.3): y = w * x with parameter "w" (gradient
// "gw") registered with ch_function_add_parameter; backward does gw += gy * x
// and gx = gy * w. The callbacks fetch w and gw through ch_context_function +
// ch_function_parameter, so all applications share them.
Fn make_eltwise_param_product(Probe* probe, ch_array* w, ch_array* gw);

// A function whose callbacks are C++ closures, for tests that need a
// one-off behaviour (the closures must not throw).
struct Lambda {
  using Forward = std::function<ch_status(ch_context* ctx, ch_array* const* in, size_t n_in)>;
  using Backward = std::function<ch_status(ch_context* ctx, ch_array* const* in, size_t n_in,
                                           ch_array* const* out, size_t n_out,
                                           ch_array* const* gout, size_t n_gout)>;
  Forward forward;
  Backward backward;  // empty: the def has no backward (not differentiable)
  std::atomic<int> destroyed{0};
};
// `lambda` must outlive every application (its `destroyed` counts the def's destroy).
Fn make_lambda_fn(const char* name, Lambda* lambda);

// Apply `f` to `inputs` and return its first output (NULL on failure, with
// a test failure recorded).
Var apply1(ch_function* f, std::initializer_list<ch_variable*> inputs);

// Helpers for callbacks.
// A new uninitialized array with `like`'s dtype and shape (*out: new reference).
ch_status new_like(ch_array** out, const ch_array* like);
template <typename T>
const T* cdata(const ch_array* a) {
  return static_cast<const T*>(ch_array_data(a));
}
template <typename T>
T* mdata(ch_array* a) {
  return static_cast<T*>(ch_array_data(a));
}

}  // namespace capi_test
