// The models of bench/train and bench/gpu through chainerc's C API: the
// 784-H-H-10 MLP (ReLU) and the convnet (conv 5x5x20, max-pool, conv 5x5x50,
// max-pool, Linear 800-500, ReLU, Linear 500-10), softmax cross entropy, SGD.
#pragma once

#include <ch/ch.h>

#include <functional>
#include <vector>

#include "bench_util.h"

namespace bench {

struct ChainercNet {
  std::vector<ch_function*> layers;  // parameterized functions, in order
  ch_function_set* set = nullptr;
  ch_optimizer* opt = nullptr;
  bool conv;
  // Called after each function of a step and after each phase (zero_grads, backward, update)
  // with its name, when set (bench/train --heap-phases attributes the heap's peak with it).
  std::function<void(const char*)> on_phase;

  // The MLP with `hidden` units, or the convnet; SGD with `lr`; the model on
  // `device` (moved there before the optimizer's setup).
  ChainercNet(bool convnet, int64_t hidden, double lr, ch_device device) : conv(convnet) {
    CH_BENCH_CHECK(ch_function_set_new(&set));
    auto add = [&](const char* name, ch_function* f) {
      layers.push_back(f);
      CH_BENCH_CHECK(ch_function_set_add_function(set, name, f));
    };
    ch_function* f = nullptr;
    if (conv) {
      CH_BENCH_CHECK(ch_functions_convolution_2d_new(&f, 1, 20, 5, 5, 1, 1, 0, 0, CH_FLOAT32, 1.0,
                                                     0.0, 0, nullptr, nullptr));
      add("conv1", f);
      CH_BENCH_CHECK(ch_functions_convolution_2d_new(&f, 20, 50, 5, 5, 1, 1, 0, 0, CH_FLOAT32, 1.0,
                                                     0.0, 0, nullptr, nullptr));
      add("conv2", f);
      CH_BENCH_CHECK(
          ch_functions_linear_new(&f, 800, 500, CH_FLOAT32, 1.0, 0.0, 0, nullptr, nullptr));
      add("l3", f);
      CH_BENCH_CHECK(
          ch_functions_linear_new(&f, 500, 10, CH_FLOAT32, 1.0, 0.0, 0, nullptr, nullptr));
      add("l4", f);
    } else {
      CH_BENCH_CHECK(
          ch_functions_linear_new(&f, 784, hidden, CH_FLOAT32, 1.0, 0.0, 0, nullptr, nullptr));
      add("l1", f);
      CH_BENCH_CHECK(
          ch_functions_linear_new(&f, hidden, hidden, CH_FLOAT32, 1.0, 0.0, 0, nullptr, nullptr));
      add("l2", f);
      CH_BENCH_CHECK(
          ch_functions_linear_new(&f, hidden, 10, CH_FLOAT32, 1.0, 0.0, 0, nullptr, nullptr));
      add("l3", f);
    }
    if (device.type != CH_DEVICE_CPU) CH_BENCH_CHECK(ch_function_set_to_gpu(set, device));
    CH_BENCH_CHECK(ch_optimizer_sgd_new(&opt, lr));
    CH_BENCH_CHECK(ch_optimizer_setup(opt, set));
    if (sgd_in_backward()) CH_BENCH_CHECK(ch_optimizer_set_step_in_backward(opt, 1));
  }
  ~ChainercNet() {
    ch_optimizer_release(opt);
    ch_function_set_release(set);
    for (ch_function* f : layers) ch_function_release(f);
  }
  ChainercNet(const ChainercNet&) = delete;
  ChainercNet& operator=(const ChainercNet&) = delete;

  static ch_variable* apply(ch_function* f, ch_variable* x) {
    ch_variable* y = nullptr;
    CH_BENCH_CHECK(ch_function_apply(f, &x, 1, &y, 1, nullptr));
    return y;
  }

  // One SGD step from the data x (batch x 784, or batch x 1 x 28 x 28 for the
  // convnet) and the int32 labels t, both borrowed; returns the loss variable
  // (a new reference). Each intermediate variable's handle is released as
  // soon as the next function has consumed it, as C++, Python and Rust code
  // does by scope (and as libtorch's temporaries are): the graph keeps what
  // backward needs. The gradients are cleared first, as libtorch's side of
  // bench/train and the examples do (Linear's forward then has W's gradient
  // as a workspace: Buffer::lend_pending_zero).
  ch_variable* train_step(ch_variable* x, ch_variable* t) {
    CH_BENCH_CHECK(ch_optimizer_zero_grads(opt));
    if (on_phase) on_phase("zero_grads");
    ch_variable* h = x;
    // h becomes `next`; the previous h's handle goes (x's is the caller's).
    const char* const* name = nullptr;
    static const char* const conv_names[] = {"conv1", "pool1", "conv2", "pool2",
                                             "l3",    "relu3", "l4"};
    static const char* const mlp_names[] = {"l1", "relu1", "l2", "relu2", "l3"};
    name = conv ? conv_names : mlp_names;
    auto phase = [&](const char* what) {
      if (on_phase) on_phase(what);
    };
    auto advance = [&](ch_variable* next) {
      if (h != x) ch_variable_release(h);
      h = next;
      if (next) phase(*name++);
    };
    ch_variable* tmp = nullptr;
    if (conv) {
      advance(apply(layers[0], h));
      CH_BENCH_CHECK(ch_functions_max_pooling_2d(&tmp, h, 2, 2, 2, 2, 0, 0, 1));
      advance(tmp);
      advance(apply(layers[1], h));
      CH_BENCH_CHECK(ch_functions_max_pooling_2d(&tmp, h, 2, 2, 2, 2, 0, 0, 1));
      advance(tmp);
      advance(apply(layers[2], h));
      CH_BENCH_CHECK(ch_functions_relu(&tmp, h));
      advance(tmp);
      advance(apply(layers[3], h));
    } else {
      for (size_t i = 0; i < layers.size(); ++i) {
        advance(apply(layers[i], h));
        if (i + 1 < layers.size()) {
          CH_BENCH_CHECK(ch_functions_relu(&tmp, h));
          advance(tmp);
        }
      }
    }
    ch_variable* loss;
    CH_BENCH_CHECK(ch_functions_softmax_cross_entropy(&loss, h, t));
    advance(nullptr);
    phase("loss");
    CH_BENCH_CHECK(ch_variable_backward(loss, 0));
    phase("backward");
    CH_BENCH_CHECK(ch_optimizer_update(opt));
    phase("update");
    return loss;
  }
};

}  // namespace bench
