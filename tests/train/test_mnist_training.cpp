// A short training run of the seed's MNIST MLP (784-100-100-10, ReLU,
// softmax cross entropy, SGD lr 0.01 as the tutorial, batch 100) on
// Fashion-MNIST through the public C API: 300 steps on the first 30,000
// training images must lower the loss and lift the test accuracy far above
// chance. The thresholds are loose (PyTorch reaches about 0.855 after 20
// epochs; after 300 steps at lr 0.01 the same model is near 0.65); the exact
// curve depends on the random initialisation, which is seeded here.
#include <cmath>
#include <cstdio>
#include <fstream>

#include "train_test_util.h"

using namespace train_test;

namespace {

class MnistTraining : public CapiTest {};

const std::string kDir = "/usr/share/datasets/fashion-mnist";

struct Batch {
  Var x, t;
};

// Rows [begin, begin + n) of images (N, 784) and labels (N,), as variables
// that need no gradient.
Batch batch_of(const ch_array* images, const ch_array* labels, int64_t begin, int64_t n,
               bool is_volatile) {
  Batch b;
  const int64_t xs[2] = {n, 784}, ts[1] = {n};
  Arr xa, ta;
  EXPECT_CH_OK(ch_array_new(xa.out(), CH_FLOAT32, xs, 2,
                            static_cast<const float*>(ch_array_data(images)) + begin * 784,
                            ch_device_cpu()));
  EXPECT_CH_OK(ch_array_new(ta.out(), CH_INT32, ts, 1,
                            static_cast<const int32_t*>(ch_array_data(labels)) + begin,
                            ch_device_cpu()));
  EXPECT_CH_OK(ch_variable_new(b.x.out(), xa, is_volatile));
  EXPECT_CH_OK(ch_variable_new(b.t.out(), ta, is_volatile));
  EXPECT_CH_OK(ch_variable_set_requires_grad(b.x, 0));
  return b;
}

struct Mlp {
  Fn l1, l2, l3;
  FnSet set;
  Mlp() {
    EXPECT_CH_OK(
        ch_functions_linear_new(l1.out(), 784, 100, CH_FLOAT32, 1, 0, 0, nullptr, nullptr));
    EXPECT_CH_OK(
        ch_functions_linear_new(l2.out(), 100, 100, CH_FLOAT32, 1, 0, 0, nullptr, nullptr));
    EXPECT_CH_OK(ch_functions_linear_new(l3.out(), 100, 10, CH_FLOAT32, 1, 0, 0, nullptr, nullptr));
    EXPECT_CH_OK(ch_function_set_new(set.out()));
    EXPECT_CH_OK(ch_function_set_add_function(set, "l1", l1));
    EXPECT_CH_OK(ch_function_set_add_function(set, "l2", l2));
    EXPECT_CH_OK(ch_function_set_add_function(set, "l3", l3));
  }
  static Var apply(ch_function* f, ch_variable* x) {
    Var y;
    EXPECT_CH_OK(ch_function_apply(f, &x, 1, y.out(), 1, nullptr));
    return y;
  }
  // The seed's forward: loss and accuracy.
  std::pair<Var, Var> forward(const Batch& b) const {
    Var h1, h2, loss, acc;
    Var a1 = apply(l1, b.x);
    EXPECT_CH_OK(ch_functions_relu(h1.out(), a1));
    Var a2 = apply(l2, h1);
    EXPECT_CH_OK(ch_functions_relu(h2.out(), a2));
    Var y = apply(l3, h2);
    EXPECT_CH_OK(ch_functions_softmax_cross_entropy(loss.out(), y, b.t));
    EXPECT_CH_OK(ch_functions_accuracy(acc.out(), y, b.t));
    return {std::move(loss), std::move(acc)};
  }
};

double scalar(const Var& v) { return data_of(v).at(0); }

TEST_F(MnistTraining, ThreeHundredStepsLowerTheLoss) {
  if (!std::ifstream(kDir + "/train-images-idx3-ubyte.gz").good())
    GTEST_SKIP() << "Fashion-MNIST is not installed at " << kDir
                 << " (Debian package dataset-fashion-mnist)";
  Arr train_x, train_t, test_x, test_t;
  ASSERT_CH_OK(ch_datasets_read_idx(train_x.out(), (kDir + "/train-images-idx3-ubyte.gz").c_str(),
                                    CH_FLOAT32, 1.0 / 255));
  ASSERT_CH_OK(ch_datasets_read_idx(train_t.out(), (kDir + "/train-labels-idx1-ubyte.gz").c_str(),
                                    CH_INT32, 1.0));
  ASSERT_CH_OK(ch_datasets_read_idx(test_x.out(), (kDir + "/t10k-images-idx3-ubyte.gz").c_str(),
                                    CH_FLOAT32, 1.0 / 255));
  ASSERT_CH_OK(ch_datasets_read_idx(test_t.out(), (kDir + "/t10k-labels-idx1-ubyte.gz").c_str(),
                                    CH_INT32, 1.0));

  ch_config_seed(20261122);
  Mlp model;
  Opt opt;
  ASSERT_CH_OK(ch_optimizer_sgd_new(opt.out(), 0.01));
  ASSERT_CH_OK(ch_optimizer_setup(opt, model.set));

  auto evaluate = [&] {  // mean test accuracy over 2,000 test images, volatile
    double acc = 0;
    for (int64_t i = 0; i < 2000; i += 100) {
      Batch b = batch_of(test_x, test_t, i, 100, true);
      acc += scalar(model.forward(b).second) / 20;
    }
    return acc;
  };
  const double acc_before = evaluate();

  const int kSteps = 300, kWindow = 30;
  double first = 0, last = 0;
  for (int step = 0; step < kSteps; ++step) {
    Batch b = batch_of(train_x, train_t, (step % 300) * 100, 100, false);
    ASSERT_CH_OK(ch_optimizer_zero_grads(opt));
    auto [loss, acc] = model.forward(b);
    ASSERT_CH_OK(ch_variable_backward(loss, 0));
    ASSERT_CH_OK(ch_optimizer_update(opt));
    const double l = scalar(loss);
    ASSERT_TRUE(std::isfinite(l)) << "step " << step;
    if (step < kWindow) first += l / kWindow;
    if (step >= kSteps - kWindow) last += l / kWindow;
  }
  const double acc_after = evaluate();
  std::printf("[          ] loss %.3f -> %.3f, test accuracy %.3f -> %.3f\n", first, last,
              acc_before, acc_after);
  EXPECT_EQ(ch_optimizer_t(opt), kSteps);
  // Cross entropy of 10 balanced classes starts near ln 10 = 2.30.
  EXPECT_GT(first, 1.8) << "an untrained model is near chance";
  EXPECT_LT(last, first - 0.5) << "mean loss of the first and last " << kWindow << " steps";
  EXPECT_LT(acc_before, 0.3);
  EXPECT_GT(acc_after, 0.5) << "test accuracy after " << kSteps << " steps";
}

}  // namespace
