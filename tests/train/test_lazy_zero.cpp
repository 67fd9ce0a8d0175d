// Lazy gradient zeroing (Optimizer::zero_grads marks a CPU gradient zero,
// Buffer::defer_zero; Linear's backward writes gW with beta 0 instead of
// adding to zeros): every reader sees zeros, two backward passes without
// zero_grads still add, and training gives the very numbers eager zeroing
// (the zero_fill kernel, what zero_grads did before) gives.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
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

Array filled(int64_t n, float v) { return Array::full(DType::Float32, Shape{n}, v); }

std::vector<float> contents(const Array& a) {
  const float* p = a.data<float>();
  return std::vector<float>(p, p + a.size());
}

bool all_zero(const Array& a) {
  for (float v : contents(a))
    if (v != 0.0f) return false;
  return true;
}

// Equal element by element (+0 and -0 equal: a GEMM with beta 1 over zeros
// gives +0 where the one with beta 0 gives the product's -0).
void expect_same(const Array& a, const Array& b, const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  const std::vector<float> x = contents(a), y = contents(b);
  int64_t differ = 0;
  for (size_t i = 0; i < x.size(); ++i) differ += !(x[i] == y[i]);
  EXPECT_EQ(differ, 0) << what << ": " << differ << " of " << x.size() << " elements differ";
}

TEST(LazyZero, EveryReaderSeesZeros) {
  const int64_t n = 3 * cpu::kElementwiseGrain + 7;
  auto marked = [&] {
    Array g = filled(n, 3.0f);
    EXPECT_TRUE(g.defer_zero());
    EXPECT_TRUE(g.buffer()->zero_pending());
    return g;
  };
  Array a = marked();
  EXPECT_EQ(a.get(5), 0.0);
  EXPECT_FALSE(a.buffer()->zero_pending());
  EXPECT_TRUE(all_zero(a));
  EXPECT_EQ(kernels::sum_of_squares(marked()), 0.0);  // grads_norm
  EXPECT_TRUE(all_zero(marked().copy()));
  EXPECT_TRUE(all_zero(marked().to_device(Device{})));
  Array s = marked();
  kernels::scale_in_place(s, 2.0);  // clip_grads
  EXPECT_TRUE(all_zero(s));
  Array w = marked();
  kernels::add_scaled_in_place(w, 0.5, filled(n, 4.0f));  // weight_decay: 0 + 0.5 * 4
  for (float v : contents(w)) ASSERT_EQ(v, 2.0f);
  Array p = filled(n, 1.0f);
  kernels::sgd_update(kernels::SgdHyper{0.1}, p, marked());  // no gradient: p unchanged
  for (float v : contents(p)) ASSERT_EQ(v, 1.0f);
}

TEST(LazyZero, ClaimHandsTheZerosToAWriter) {
  Array g = filled(1000, 3.0f);
  EXPECT_FALSE(g.claim_zero());  // not marked
  ASSERT_TRUE(g.defer_zero());
  EXPECT_TRUE(g.claim_zero());
  EXPECT_FALSE(g.buffer()->zero_pending());
  EXPECT_FALSE(g.claim_zero());  // once
  // The claimer writes every element; nobody else did (the old values are there).
  EXPECT_EQ(contents(g)[999], 3.0f);
}

TEST(LazyZero, MemoryTheEngineDoesNotOwnAloneIsZeroedEagerly) {
  std::vector<float> user(64, 5.0f);
  Array wrapped(Buffer::wrap(user.data(), user.size() * sizeof(float), Device{}, nullptr, nullptr),
                DType::Float32, Shape{64});
  EXPECT_FALSE(wrapped.defer_zero());
  Array exposed = filled(64, 5.0f);
  exposed.buffer()->expose();  // what ch_array_data does
  EXPECT_FALSE(exposed.defer_zero());

  // zero_grads writes those at once, so that a pointer held outside sees zeros.
  Array w = filled(64, 1.0f);
  OptimizerPtr opt = make_sgd(0.1, "test");
  opt->setup({NamedParameter{"wrapped", w, wrapped}, NamedParameter{"exposed", w.copy(), exposed}},
             "test");
  opt->zero_grads();
  for (float v : user) ASSERT_EQ(v, 0.0f);
  EXPECT_FALSE(exposed.buffer()->zero_pending());
  EXPECT_TRUE(all_zero(exposed));
}

TEST(LazyZero, ConcurrentReadersAllSeeZeros) {
  for (int round = 0; round < 20; ++round) {
    Array g = filled(1 << 20, 7.0f);  // 4 MiB
    ASSERT_TRUE(g.defer_zero());
    std::vector<int> zero(4, 0);
    std::vector<std::thread> readers;
    for (int t = 0; t < 4; ++t)
      readers.emplace_back([&, t] {
        const float* p = g.data<float>();
        bool ok = true;
        for (int64_t i = g.size() - 1; i >= 0; i -= 4093) ok = ok && p[i] == 0.0f;
        zero[t] = ok;
      });
    for (std::thread& r : readers) r.join();
    for (int t = 0; t < 4; ++t) EXPECT_EQ(zero[t], 1) << "round " << round << " reader " << t;
  }
}

TEST(LazyZero, APendingBufferLendsItsBytesAndStaysPending) {
  Array g = filled(1000, 3.0f);
  Buffer* b = g.buffer().get();
  EXPECT_EQ(b->lend_pending_zero(g.nbytes()), nullptr);  // not pending: it holds values
  ASSERT_TRUE(g.defer_zero());
  EXPECT_EQ(b->lend_pending_zero(g.nbytes() + 4), nullptr);  // larger than the buffer
  {
    const Buffer::Loan loan(b, g.nbytes());
    ASSERT_NE(loan.data(), nullptr);
    std::memset(loan.data(), 0x7f, g.nbytes());  // the borrower's scratch
    EXPECT_EQ(b->lend_pending_zero(4), nullptr) << "lent twice";
    const Buffer::Loan second(b, 4);
    EXPECT_EQ(second.data(), nullptr);
    EXPECT_TRUE(b->zero_pending());
    EXPECT_TRUE(g.defer_zero());  // still pending: nothing to do, and no wait
  }
  EXPECT_TRUE(b->zero_pending());
  EXPECT_TRUE(all_zero(g)) << "the scratch showed through";
  // After the loan a writer can claim the zeros as before.
  ASSERT_TRUE(g.defer_zero());
  { const Buffer::Loan loan(b, 16); }
  EXPECT_TRUE(g.claim_zero());
  const Buffer::Loan none(nullptr, 16);  // no buffer: nothing lent
  EXPECT_EQ(none.data(), nullptr);
}

TEST(LazyZero, ReadersAndClaimersWaitForTheLoansEnd) {
  for (bool claim : {false, true}) {
    Array g = filled(1 << 16, 5.0f);
    ASSERT_TRUE(g.defer_zero());
    Buffer* b = g.buffer().get();
    void* scratch = b->lend_pending_zero(g.nbytes());
    ASSERT_NE(scratch, nullptr);
    std::atomic<bool> loan_over{false}, done{false};
    bool saw_zeros = false, claimed = false, after_loan = false;
    std::thread other([&] {
      if (claim) {
        claimed = g.claim_zero();
      } else {
        const float* p = g.data<float>();
        saw_zeros = p[0] == 0.0f && p[g.size() - 1] == 0.0f;
      }
      after_loan = loan_over.load();
      done = true;
    });
    std::memset(scratch, 0x7f, g.nbytes());
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    EXPECT_FALSE(done.load()) << "it did not wait for the loan";
    loan_over = true;
    b->end_loan();
    other.join();
    EXPECT_TRUE(after_loan);
    if (claim)
      EXPECT_TRUE(claimed);  // the zeros are the claimer's to write
    else
      EXPECT_TRUE(saw_zeros);
  }
}

// An MLP 784-h-h-10 (bench/train's) with one unused Linear in the optimizer.
struct Net {
  std::vector<FuncPtr> layers;
  OptimizerPtr opt;
  explicit Net(int64_t h, uint64_t seed) {
    random::seed(seed);
    layers.push_back(ops::linear_new(784, h, DType::Float32, 1, 0, false, nullptr, nullptr));
    layers.push_back(ops::linear_new(h, h, DType::Float32, 1, 0, false, nullptr, nullptr));
    layers.push_back(ops::linear_new(h, 10, DType::Float32, 1, 0, false, nullptr, nullptr));
    layers.push_back(ops::linear_new(10, 10, DType::Float32, 1, 0, false, nullptr, nullptr));
    std::vector<NamedParameter> params;
    for (size_t i = 0; i < layers.size(); ++i)
      for (const Parameter& p : *layers[i]->parameters)
        params.push_back(NamedParameter{"l" + std::to_string(i) + "/" + p.name, p.param, p.grad});
    opt = make_momentum_sgd(0.01, 0.9, "test");
    opt->setup(std::move(params), "test");
  }
  void forward_backward(const Array& xa, const Array& ta) {
    VarPtr h = std::make_shared<VariableImpl>(xa);
    VarPtr t = std::make_shared<VariableImpl>(ta);
    h->requires_grad = false;
    t->requires_grad = false;
    for (size_t i = 0; i < 3; ++i) {
      h = apply1(layers[i]->clone(), {h});
      if (i < 2) h = ops::relu(h);
    }
    backward(ops::softmax_cross_entropy(h, t), false);
  }
  void zero_eagerly() {  // what zero_grads did before lazy zeroing
    for (OptSlot& s : opt->slots) kernels::zero_fill(s.grad);
  }
};

void batch(Array& xa, Array& ta, int step) {
  xa = Array::empty(DType::Float32, Shape{100, 784});
  ta = Array::empty(DType::Int32, Shape{100});
  for (int64_t i = 0; i < xa.size(); ++i)
    xa.data<float>()[i] = static_cast<float>((i * 7919 + step * 31) % 256) / 255.0f - 0.2f;
  for (int64_t i = 0; i < 100; ++i) ta.data<int32_t>()[i] = static_cast<int32_t>((i + step) % 10);
}

void compare(Net& lazy, Net& eager, const std::string& when) {
  for (size_t i = 0; i < lazy.opt->slots.size(); ++i) {
    expect_same(lazy.opt->slots[i].param, eager.opt->slots[i].param,
                when + " " + lazy.opt->slots[i].path);
    expect_same(lazy.opt->slots[i].grad, eager.opt->slots[i].grad,
                when + " gradient of " + lazy.opt->slots[i].path);
  }
}

TEST(LazyZero, TrainingMatchesEagerZeroing) {
  // One library for every product: the lazy net's forward has W's gradient
  // as a workspace (LazyZero.ForwardBorrowsThePendingGradient), which could
  // choose another library, and other bits, than the eager net's.
  cpu::force_gemm_library("openblas");
  for (int threads : {1, 2}) {
    cpu::set_num_threads(threads);
    Net lazy(64, 5), eager(64, 5);
    Array xa, ta;
    for (int step = 0; step < 4; ++step) {
      batch(xa, ta, step);
      lazy.opt->zero_grads();
      // W of the used layers is claimed by its GEMM, the rest written on first use.
      EXPECT_TRUE(lazy.opt->slots[0].grad.buffer()->zero_pending());
      eager.zero_eagerly();
      lazy.forward_backward(xa, ta);
      eager.forward_backward(xa, ta);
      EXPECT_FALSE(lazy.opt->slots[0].grad.buffer()->zero_pending());
      // The unused layer's gradients stay marked until the update reads them.
      EXPECT_TRUE(lazy.opt->slots[6].grad.buffer()->zero_pending());
      lazy.opt->update("test");
      eager.opt->update("test");
      compare(lazy, eager, "threads " + std::to_string(threads) + " step " + std::to_string(step));
      EXPECT_TRUE(all_zero(lazy.opt->slots[6].grad));
    }
  }
  cpu::set_num_threads(1);
  cpu::force_gemm_library("auto");
}

// Linear's forward after zero_grads has W's pending gradient as its
// product's workspace (libxsmm over W transposed, forced here so that it
// runs): y is x W^T + b, and the gradient still reads as zeros afterwards,
// then as gy^T x after backward, as with eager zeroing.
TEST(LazyZero, ForwardBorrowsThePendingGradient) {
  if (!cpu::gemm_library_available(cpu::GemmLibrary::libxsmm, false))
    GTEST_SKIP() << "libxsmm is not built in or not usable on this CPU";
  cpu::force_gemm_library("libxsmm");
  for (int threads : {1, 2}) {
    cpu::set_num_threads(threads);
    Net lazy(64, 3), eager(64, 3);
    Array xa, ta;
    batch(xa, ta, 2);
    lazy.opt->zero_grads();
    eager.zero_eagerly();
    VarPtr x = std::make_shared<VariableImpl>(xa);
    x->requires_grad = false;
    VarPtr y = apply1(lazy.layers[0]->clone(), {x});
    const Array& W = lazy.opt->slots[0].param;
    const Array& b = lazy.opt->slots[1].param;
    // y against x W^T + b summed in double.
    for (int64_t i = 0; i < 100; i += 7)
      for (int64_t j = 0; j < 64; j += 5) {
        double want = b.data<float>()[j];
        for (int64_t p = 0; p < 784; ++p)
          want += double(xa.data<float>()[i * 784 + p]) * double(W.data<float>()[j * 784 + p]);
        ASSERT_NEAR(y->data.data<float>()[i * 64 + j], want, 1e-4 * (1 + std::fabs(want)))
            << i << "," << j;
      }
    EXPECT_TRUE(lazy.opt->slots[0].grad.buffer()->zero_pending());
    EXPECT_TRUE(all_zero(lazy.opt->slots[0].grad)) << "W transposed showed through";
    // And through a whole step, the gradients and the update as eager zeroing's.
    lazy.opt->zero_grads();
    lazy.forward_backward(xa, ta);
    eager.forward_backward(xa, ta);
    for (size_t i = 0; i < 6; ++i) {
      const std::vector<float> got = contents(lazy.opt->slots[i].grad);
      const std::vector<float> want = contents(eager.opt->slots[i].grad);
      for (size_t k = 0; k < got.size(); ++k)
        ASSERT_NEAR(got[k], want[k], 1e-5 * (1 + std::fabs(want[k])))
            << lazy.opt->slots[i].path << "[" << k << "] threads " << threads;
    }
  }
  // The gradient as the layer's input (its shape fits, 64 x 784): not lent
  // to the product that reads it, which sees its zeros (y = b).
  cpu::set_num_threads(1);
  Net net(64, 4);
  net.opt->zero_grads();
  VarPtr g = std::make_shared<VariableImpl>(net.opt->slots[0].grad);
  g->requires_grad = false;
  VarPtr y = apply1(net.layers[0]->clone(), {g});
  const Array& b = net.opt->slots[1].param;
  for (int64_t i = 0; i < 64; ++i)
    for (int64_t j = 0; j < 64; ++j)
      ASSERT_EQ(y->data.data<float>()[i * 64 + j], b.data<float>()[j]) << i << "," << j;
  cpu::force_gemm_library("auto");
}

TEST(LazyZero, TwoBackwardPassesWithoutZeroGradsAdd) {
  cpu::force_gemm_library("openblas");  // the same bits for both (TrainingMatchesEagerZeroing)
  Net lazy(32, 9), eager(32, 9), once(32, 9);
  Array xa, ta;
  batch(xa, ta, 1);
  lazy.opt->zero_grads();
  eager.zero_eagerly();
  once.opt->zero_grads();
  for (int pass = 0; pass < 2; ++pass) {
    lazy.forward_backward(xa, ta);
    eager.forward_backward(xa, ta);
  }
  once.forward_backward(xa, ta);
  compare(lazy, eager, "two passes");
  for (size_t i = 0; i < 6; ++i) {
    const std::vector<float> two = contents(lazy.opt->slots[i].grad);
    const std::vector<float> one = contents(once.opt->slots[i].grad);
    EXPECT_FALSE(all_zero(lazy.opt->slots[i].grad)) << lazy.opt->slots[i].path;
    for (size_t k = 0; k < one.size(); ++k) {
      // gW at beta 1: OpenBLAS adds the product g to g (exact), libxsmm's
      // kernels accumulate the product's terms onto g one by one (rounded
      // at every step); gb: each row of gy added in turn.
      ASSERT_NEAR(two[k], 2 * one[k], 1e-5 * (1 + std::fabs(one[k])))
          << lazy.opt->slots[i].path << "[" << k << "]";
    }
  }
  cpu::force_gemm_library("auto");
}

}  // namespace
