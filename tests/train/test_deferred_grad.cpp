// Deferred weight gradients (Linear's backward leaves a large gW pending zero
// as the product gy^T x, Buffer::defer_value): every reader gets gy^T x, as
// if it had been written; plain SGD adds -lr gy^T x into W without writing
// it (Buffer::add_deferred_to); a write into an operand first computes the
// products that read it (Buffer::before_write), and an operand whose writes
// the engine cannot see is kept as a copy. The reference is the same net
// whose gradients were handed out (Buffer::expose): never zeroed lazily, so
// backward writes gW with a GEMM as it always did.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "backend/cpu/gemm.h"
#include "backend/cpu/parallel.h"
#include "core/array.h"
#include "core/random.h"
#include "core/variable.h"
#include "kernels/math.h"
#include "kernels/optimizers.h"
#include "ops/ops.h"
#include "train/optimizer.h"
#include "train/optimizers/optimizers.h"

using namespace chainerc;

namespace {

constexpr int64_t kIn = 784, kHidden = 512, kBatch = 100;

std::vector<float> contents(const Array& a) {
  const float* p = a.data<float>();
  return std::vector<float>(p, p + a.size());
}

void expect_close(const std::vector<float>& got, const std::vector<float>& want,
                  const std::string& what, double rel = 1e-5) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t k = 0; k < got.size(); ++k)
    ASSERT_NEAR(got[k], want[k], rel * (1 + std::fabs(want[k]))) << what << "[" << k << "]";
}

using MakeOptimizer = std::function<OptimizerPtr()>;

// An MLP 784-512-512-10: W1 (1.6 MB) and W2 (1 MB) are large enough to be
// deferred, W3 (20 KB) is written at once.
struct Net {
  std::vector<FuncPtr> layers;
  OptimizerPtr opt;
  Net(uint64_t seed, const MakeOptimizer& make, bool reference) {
    random::seed(seed);
    layers.push_back(ops::linear_new(kIn, kHidden, DType::Float32, 1, 0, false, nullptr, nullptr));
    layers.push_back(
        ops::linear_new(kHidden, kHidden, DType::Float32, 1, 0, false, nullptr, nullptr));
    layers.push_back(ops::linear_new(kHidden, 10, DType::Float32, 1, 0, false, nullptr, nullptr));
    std::vector<NamedParameter> params;
    for (size_t i = 0; i < layers.size(); ++i)
      for (const Parameter& p : *layers[i]->parameters) {
        // The reference's gradients are zeroed eagerly and written by backward.
        if (reference) p.grad.buffer()->expose();
        params.push_back(NamedParameter{"l" + std::to_string(i) + "/" + p.name, p.param, p.grad});
      }
    opt = make();
    opt->setup(std::move(params), "test");
  }
  void forward_backward(const Array& xa, const Array& ta) {
    VarPtr h = std::make_shared<VariableImpl>(xa);
    VarPtr t = std::make_shared<VariableImpl>(ta);
    h->requires_grad = false;
    t->requires_grad = false;
    for (size_t i = 0; i < layers.size(); ++i) {
      h = apply1(layers[i]->clone(), {h});
      if (i + 1 < layers.size()) h = ops::relu(h);
    }
    backward(ops::softmax_cross_entropy(h, t), false);
  }
  void step(const Array& xa, const Array& ta) {
    opt->zero_grads();
    forward_backward(xa, ta);
    opt->update("test");
  }
  const Array& grad(size_t slot) const { return opt->slots[slot].grad; }
  const Array& param(size_t slot) const { return opt->slots[slot].param; }
  bool deferred(size_t slot) const { return grad(slot).buffer()->value_deferred(); }
};

void batch(Array& xa, Array& ta, int step) {
  xa = Array::empty(DType::Float32, Shape{kBatch, kIn});
  ta = Array::empty(DType::Int32, Shape{kBatch});
  for (int64_t i = 0; i < xa.size(); ++i)
    xa.data<float>()[i] = static_cast<float>((i * 7919 + step * 31) % 256) / 255.0f - 0.2f;
  for (int64_t i = 0; i < kBatch; ++i)
    ta.data<int32_t>()[i] = static_cast<int32_t>((i * 3 + step) % 10);
}

MakeOptimizer sgd() {
  return [] { return make_sgd(0.05, "test"); };
}

// One library for every product, so that the two nets differ only in
// whether gW was written (the GEMM choice could differ by class otherwise).
struct OneLibrary {
  OneLibrary() { cpu::force_gemm_library("openblas"); }
  ~OneLibrary() {
    cpu::force_gemm_library("auto");
    cpu::set_num_threads(1);
  }
};

TEST(DeferredGrad, LargeWeightGradientsAreLeftAsTheProduct) {
  OneLibrary one;
  Net lazy(3, sgd(), false), ref(3, sgd(), true);
  Array xa, ta;
  batch(xa, ta, 0);
  lazy.opt->zero_grads();
  ref.opt->zero_grads();
  lazy.forward_backward(xa, ta);
  ref.forward_backward(xa, ta);
  EXPECT_TRUE(lazy.deferred(0)) << "W1's gradient (512 x 784) was written";
  EXPECT_TRUE(lazy.deferred(2)) << "W2's gradient (512 x 512) was written";
  EXPECT_FALSE(lazy.deferred(4)) << "W3's gradient (10 x 512) is small: written at once";
  EXPECT_FALSE(ref.deferred(0));
  for (size_t s = 0; s < lazy.opt->slots.size(); ++s)
    expect_close(contents(lazy.grad(s)), contents(ref.grad(s)), lazy.opt->slots[s].path);
  EXPECT_FALSE(lazy.deferred(0)) << "a read writes the product";
}

TEST(DeferredGrad, SgdAddsTheProductIntoTheWeights) {
  OneLibrary one;
  for (int threads : {1, 2}) {
    cpu::set_num_threads(threads);
    Net lazy(5, sgd(), false), ref(5, sgd(), true);
    Array xa, ta;
    for (int step = 0; step < 3; ++step) {
      batch(xa, ta, step);
      lazy.step(xa, ta);
      ref.step(xa, ta);
      // The update added the product into W: still unwritten.
      EXPECT_TRUE(lazy.deferred(0)) << "threads " << threads << " step " << step;
      const std::string when =
          "threads " + std::to_string(threads) + " step " + std::to_string(step) + " ";
      for (size_t s = 0; s < lazy.opt->slots.size(); ++s)
        expect_close(contents(lazy.param(s)), contents(ref.param(s)),
                     when + lazy.opt->slots[s].path);
    }
    // Read after the update: the gradient that update used, gy^T x.
    for (size_t s = 0; s < lazy.opt->slots.size(); ++s)
      expect_close(contents(lazy.grad(s)), contents(ref.grad(s)),
                   "gradient of " + lazy.opt->slots[s].path);
  }
}

TEST(DeferredGrad, OtherOptimizersReadTheWrittenGradient) {
  OneLibrary one;
  const std::vector<std::pair<std::string, MakeOptimizer>> optimizers = {
      {"momentum", [] { return make_momentum_sgd(0.02, 0.9, "test"); }},
      {"adam", [] { return make_adam(0.001, 0.9, 0.999, 1.0, 1e-8, "test"); }},
      {"rmsprop", [] { return make_rmsprop(0.001, 0.99, 1e-8, "test"); }},
  };
  for (const auto& [name, make] : optimizers) {
    Net lazy(7, make, false), ref(7, make, true);
    Array xa, ta;
    for (int step = 0; step < 3; ++step) {
      batch(xa, ta, step);
      lazy.step(xa, ta);
      ref.step(xa, ta);
    }
    EXPECT_FALSE(lazy.deferred(0)) << name << " reads the gradient, which writes it";
    for (size_t s = 0; s < lazy.opt->slots.size(); ++s)
      expect_close(contents(lazy.param(s)), contents(ref.param(s)),
                   name + " " + lazy.opt->slots[s].path, 1e-4);
  }
}

// x, the first layer's input, is an operand of W1's deferred gradient: each
// way of writing into it computes that gradient first, from the x backward saw.
TEST(DeferredGrad, AWriteIntoAnOperandComputesTheProductFirst) {
  OneLibrary one;
  const std::vector<std::pair<std::string, std::function<void(Array&)>>> writes = {
      {"a kernel's output", [](Array& x) { kernels::scale_in_place(x, -3.0); }},
      {"raw_for_write", [](Array& x) { std::memset(x.raw_for_write(), 0, x.nbytes()); }},
      {"a pointer handed out",
       [](Array& x) {
         x.buffer()->expose();
         std::memset(x.raw(), 0x7f, x.nbytes());
       }},
      {"Array::fill", [](Array& x) { x.fill(2.5); }},
      {"zero_fill", [](Array& x) { kernels::zero_fill(x); }},
  };
  for (const auto& [how, write] : writes) {
    Net lazy(11, sgd(), false), ref(11, sgd(), true);
    Array xa, ta;
    batch(xa, ta, 1);
    lazy.opt->zero_grads();
    ref.opt->zero_grads();
    lazy.forward_backward(xa, ta);
    ref.forward_backward(xa, ta);
    ASSERT_TRUE(lazy.deferred(0)) << how;
    write(xa);
    EXPECT_FALSE(lazy.deferred(0)) << how << ": the write did not compute the product first";
    expect_close(contents(lazy.grad(0)), contents(ref.grad(0)), how);
  }
}

// A deferred value for the test below: `n` floats, each the sum of its
// operand; writing it records whether `watched` still held its deferred value
// then. Added elsewhere, it scales the target in place (a kernel's write).
class Watching final : public DeferredValue {
 public:
  Watching(Array operand, const Buffer* watched, int* deferred_at_write)
      : DeferredValue({std::move(operand)}), watched_(watched), flag_(deferred_at_write) {}
  void write(void* dst) const override {
    *flag_ = watched_ && watched_->value_deferred() ? 1 : 0;
    float sum = 0;
    for (float v : contents(operands()[0])) sum += v;
    float* out = static_cast<float*>(dst);
    for (int64_t i = 0; i < kSize; ++i) out[i] = sum;
  }
  bool add_scaled_to(const Array& target, double scale) const override {
    Array t = target;
    kernels::scale_in_place(t, 1.0 + scale);
    return true;
  }
  static constexpr int64_t kSize = 64;

 private:
  const Buffer* watched_;
  int* flag_;
};

// W's update (add_deferred_to) where W is an operand of another deferred
// value R (a weight read as data elsewhere): R is computed from the W before
// the update, and before W's gradient turns "computing". Computed from inside
// the update instead, R's computation would take the registry lock while W's
// gradient is computing, and a thread holding that lock while it waits for
// the gradient (a write into one of its operands) would never get it.
TEST(DeferredGrad, AnUpdateComputesWhatReadsTheWeightBeforeItStarts) {
  Array w = Array::full(DType::Float32, Shape{Watching::kSize}, 2.0);
  Array g = Array::empty(DType::Float32, Shape{Watching::kSize});
  Array r = Array::empty(DType::Float32, Shape{Watching::kSize});
  int g_deferred_when_r_written = -1, unused = -1;
  ASSERT_TRUE(g.buffer()->defer_zero(g.nbytes()));
  ASSERT_TRUE(r.buffer()->defer_zero(r.nbytes()));
  ASSERT_TRUE(g.buffer()->defer_value(
      std::make_shared<Watching>(Array::full(DType::Float32, Shape{Watching::kSize}, 1.0), nullptr,
                                 &unused),
      g.nbytes()));
  ASSERT_TRUE(r.buffer()->defer_value(
      std::make_shared<Watching>(w, g.buffer().get(), &g_deferred_when_r_written), r.nbytes()));
  ASSERT_TRUE(g.buffer()->add_deferred_to(w, -0.5));
  EXPECT_FALSE(r.buffer()->value_deferred()) << "the update did not compute R first";
  EXPECT_EQ(g_deferred_when_r_written, 1)
      << "R was computed while W's gradient was computing its addition";
  // R from W before the update (64 x 2), W scaled by the stand-in addition.
  expect_close(contents(r), std::vector<float>(Watching::kSize, 128.f), "R");
  expect_close(contents(w), std::vector<float>(Watching::kSize, 1.f), "W");
  EXPECT_TRUE(g.buffer()->value_deferred()) << "the gradient keeps its value after the update";
}

// An input whose pointer was handed out before forward can change without the
// engine seeing it: W1's deferred product keeps a copy of it.
TEST(DeferredGrad, AnOperandWhoseWritesAreNotSeenIsCopied) {
  OneLibrary one;
  Net lazy(13, sgd(), false), ref(13, sgd(), true);
  Array xa, ta;
  batch(xa, ta, 2);
  xa.buffer()->expose();
  lazy.opt->zero_grads();
  ref.opt->zero_grads();
  lazy.forward_backward(xa, ta);
  ref.forward_backward(xa, ta);
  ASSERT_TRUE(lazy.deferred(0));
  std::memset(xa.raw(), 0, xa.nbytes());  // unseen by the engine
  EXPECT_TRUE(lazy.deferred(0));
  expect_close(contents(lazy.grad(0)), contents(ref.grad(0)), "W1's gradient");
}

TEST(DeferredGrad, ZeroGradsDropsTheProduct) {
  OneLibrary one;
  Net lazy(17, sgd(), false);
  Array xa, ta;
  batch(xa, ta, 3);
  lazy.opt->zero_grads();
  lazy.forward_backward(xa, ta);
  ASSERT_TRUE(lazy.deferred(0));
  lazy.opt->zero_grads();
  EXPECT_FALSE(lazy.deferred(0));
  for (float v : contents(lazy.grad(0))) ASSERT_EQ(v, 0.0f);
  // x is no longer read by anything: a write into it computes nothing.
  kernels::scale_in_place(xa, 2.0);
  for (float v : contents(lazy.grad(0))) ASSERT_EQ(v, 0.0f);
}

TEST(DeferredGrad, ASecondBackwardAddsToTheProduct) {
  OneLibrary one;
  Net twice(19, sgd(), false), once(19, sgd(), true);
  Array xa, ta;
  batch(xa, ta, 4);
  twice.opt->zero_grads();
  once.opt->zero_grads();
  twice.forward_backward(xa, ta);
  ASSERT_TRUE(twice.deferred(0));
  twice.forward_backward(xa, ta);  // claims the product (written) and adds to it
  once.forward_backward(xa, ta);
  std::vector<float> doubled = contents(once.grad(0));
  for (float& v : doubled) v *= 2;
  expect_close(contents(twice.grad(0)), doubled, "W1's gradient after two passes");
}

TEST(DeferredGrad, ConcurrentReadersAllGetTheProduct) {
  OneLibrary one;
  Net ref(23, sgd(), true);
  Array xa, ta;
  batch(xa, ta, 5);
  ref.opt->zero_grads();
  ref.forward_backward(xa, ta);
  const std::vector<float> want = contents(ref.grad(0));
  for (int round = 0; round < 4; ++round) {
    Net lazy(23, sgd(), false);
    lazy.opt->zero_grads();
    lazy.forward_backward(xa, ta);
    ASSERT_TRUE(lazy.deferred(0));
    std::vector<float> seen[3];
    std::vector<std::thread> readers;
    for (auto& s : seen) readers.emplace_back([&lazy, &s] { s = contents(lazy.grad(0)); });
    for (auto& r : readers) r.join();
    for (const auto& s : seen) expect_close(s, want, "round " + std::to_string(round));
  }
}

// Gradients released with their product never computed: nothing leaks
// (the sanitizer pass), and later deferrals still work.
TEST(DeferredGrad, ReleasedUnwrittenGradientsLeaveNothingBehind) {
  OneLibrary one;
  Array xa, ta;
  batch(xa, ta, 6);
  for (int round = 0; round < 3; ++round) {
    Net lazy(29, sgd(), false);
    lazy.opt->zero_grads();
    lazy.forward_backward(xa, ta);
    ASSERT_TRUE(lazy.deferred(0));
  }
  // xa outlived the products that read it: a write computes nothing.
  kernels::scale_in_place(xa, 0.5);
  Net ref(31, sgd(), true), lazy(31, sgd(), false);
  lazy.step(xa, ta);
  ref.step(xa, ta);
  expect_close(contents(lazy.param(0)), contents(ref.param(0)), "W1 after a step");
}

}  // namespace
