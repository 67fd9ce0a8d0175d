// A small MLP trained through the public C API, shared by the soak and the
// thread stress tests: Linear(4, 8) -> relu -> Linear(8, 2), mean squared
// error against a fixed target, an optimizer stepping on every batch.
#pragma once

#include <ch/ch.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>

namespace reliability {

// Aborts with the message when a call that must succeed fails (the stress
// test's threads cannot use gtest assertions portably for every call).
inline void must(ch_status st, const char* what) {
  if (st != CH_OK) {
    std::fprintf(stderr, "%s failed: %s\n", what, ch_error_message());
    std::abort();
  }
}
#define REL_MUST(call) ::reliability::must((call), #call)

class Mlp {
 public:
  // Weights from a deterministic pattern of `seed`; Adam or plain SGD.
  explicit Mlp(int seed, bool adam = true) {
    REL_MUST(ch_function_set_new(&set_));
    float w1[32], w2[16];
    for (int i = 0; i < 32; ++i) w1[i] = 0.05f * static_cast<float>((i * 7 + seed) % 11) - 0.25f;
    for (int i = 0; i < 16; ++i) w2[i] = 0.04f * static_cast<float>((i * 5 + seed) % 13) - 0.24f;
    const int64_t s1[] = {8, 4}, s2[] = {2, 8};
    ch_array* W1 = nullptr;
    ch_array* W2 = nullptr;
    REL_MUST(ch_array_new(&W1, CH_FLOAT32, s1, 2, w1, ch_device_cpu()));
    REL_MUST(ch_array_new(&W2, CH_FLOAT32, s2, 2, w2, ch_device_cpu()));
    REL_MUST(ch_functions_linear_new(&l1_, 4, 8, CH_FLOAT32, 1, 0, 0, W1, nullptr));
    REL_MUST(ch_functions_linear_new(&l2_, 8, 2, CH_FLOAT32, 1, 0, 0, W2, nullptr));
    ch_array_release(W1);
    ch_array_release(W2);
    REL_MUST(ch_function_set_add_function(set_, "l1", l1_));
    REL_MUST(ch_function_set_add_function(set_, "l2", l2_));
    if (adam)
      REL_MUST(ch_optimizer_adam_new(&opt_, 0.01, 0.9, 0.999, 1, 1e-8));
    else
      REL_MUST(ch_optimizer_sgd_new(&opt_, 0.05));
    REL_MUST(ch_optimizer_setup(opt_, set_));
  }
  ~Mlp() {
    ch_optimizer_release(opt_);
    ch_function_set_release(set_);
    ch_function_release(l1_);
    ch_function_release(l2_);
  }
  Mlp(const Mlp&) = delete;
  Mlp& operator=(const Mlp&) = delete;

  // The network's output variable for x (new reference).
  ch_variable* forward(ch_variable* x) {
    size_t n = 0;
    ch_variable* h = nullptr;
    REL_MUST(ch_function_apply(l1_, &x, 1, &h, 1, &n));
    ch_variable* r = nullptr;
    REL_MUST(ch_functions_relu(&r, h));
    ch_variable* y = nullptr;
    REL_MUST(ch_function_apply(l2_, &r, 1, &y, 1, &n));
    ch_variable_release(h);
    ch_variable_release(r);
    return y;
  }

  // One step on a batch of `batch` rows: x = i / (batch * 4) pattern, t = 0.5.
  // Returns the loss before the update.
  double step(int64_t batch) {
    ch_variable* x = batch_input(batch);
    ch_variable* y = forward(x);
    double loss = finish(y, batch);
    ch_variable_release(y);
    ch_variable_release(x);
    return loss;
  }

  static ch_variable* batch_input(int64_t batch) {
    const int64_t xs[] = {batch, 4};
    ch_array* xa = nullptr;
    REL_MUST(ch_array_new_empty(&xa, CH_FLOAT32, xs, 2, ch_device_cpu()));
    float* p = static_cast<float*>(ch_array_data(xa));
    for (int64_t i = 0; i < batch * 4; ++i) p[i] = static_cast<float>(i) / (batch * 4.0f);
    ch_variable* x = nullptr;
    REL_MUST(ch_variable_new(&x, xa, 0));
    ch_array_release(xa);
    return x;
  }

  // Loss of y against 0.5, backward and update; returns the loss.
  double finish(ch_variable* y, int64_t batch) {
    const int64_t ts[] = {batch, 2};
    ch_array* ta = nullptr;
    REL_MUST(ch_array_new_full(&ta, CH_FLOAT32, ts, 2, 0.5, ch_device_cpu()));
    ch_variable* t = nullptr;
    REL_MUST(ch_variable_new(&t, ta, 0));
    ch_variable* l = nullptr;
    REL_MUST(ch_functions_mean_squared_error(&l, y, t));
    REL_MUST(ch_optimizer_zero_grads(opt_));
    REL_MUST(ch_variable_backward(l, 0));
    REL_MUST(ch_optimizer_update(opt_));
    ch_array* ld = nullptr;
    REL_MUST(ch_variable_data(&ld, l));
    double loss = 0;
    REL_MUST(ch_array_get(&loss, ld, 0));
    ch_array_release(ld);
    ch_variable_release(l);
    ch_variable_release(t);
    ch_array_release(ta);
    return loss;
  }

  ch_function* l1() const { return l1_; }

 private:
  ch_function_set* set_ = nullptr;
  ch_function* l1_ = nullptr;
  ch_function* l2_ = nullptr;
  ch_optimizer* opt_ = nullptr;
};

}  // namespace reliability
