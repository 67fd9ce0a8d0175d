// CPU / emulated-GPU agreement of the loss functions: softmax_cross_entropy,
// mean_squared_error and BinaryHierarchicalSoftmax, forward and backward, in
// float32 and float64, at sizes that are not multiples of a block and beyond
// the emulator's grid; check_backward on cuda:0; and the same CH_ERR_* status
// and message for bad labels on cuda:0 as on the CPU (accuracy's label check
// is the same kernel).
#include <ch/config.h>

#include <functional>

#include "agreement.h"
#include "parameter_check.h"

namespace gputest {
namespace {

using namespace chainerc;

const DType kDtypes[] = {DType::Float32, DType::Float64};

std::string label(const char* what, DType dt, const Shape& s) {
  return std::string(what) + " " + dtype_name(dt) + " " + s.to_string();
}

Build sce() {
  return [](const std::vector<VarPtr>& x, const FuncPtr&) {
    return std::vector<VarPtr>{ops::softmax_cross_entropy(x[0], x[1])};
  };
}
Build mse() {
  return [](const std::vector<VarPtr>& x, const FuncPtr&) {
    return std::vector<VarPtr>{ops::mean_squared_error(x[0], x[1])};
  };
}
Build apply_fn() {
  return [](const std::vector<VarPtr>& x, const FuncPtr& fn) {
    return std::vector<VarPtr>{apply1(fn, x)};
  };
}

// Rows and classes: one class, a row shorter than a warp, rows longer than a
// block (the row loops stride), many rows (more than the emulator's grid).
const std::vector<std::pair<int64_t, int64_t>> kSceShapes = {
    {1, 1}, {31, 7}, {5, 1025}, {3, 300}, {1031, 5}};

TEST_F(GpuFunctions, SoftmaxCrossEntropyAtEverySize) {
  for (DType dt : kDtypes)
    for (const auto& nc : kSceShapes) {
      const Shape s{nc.first, nc.second};
      expect_agreement({label("softmax_cross_entropy", dt, s),
                        {uniform(dt, s, -4, 4, 21), labels({nc.first}, int32_t(nc.second), 22)},
                        sce()});
    }
}

TEST_F(GpuFunctions, SoftmaxCrossEntropyOfLargeScores) {
  // Scores far from 0: the row maximum must be subtracted on the device too.
  for (DType dt : kDtypes) {
    const Shape s{7, 33};
    expect_agreement({label("softmax_cross_entropy large", dt, s),
                      {uniform(dt, s, 500, 900, 23), labels({7}, 33, 24)},
                      sce()});
  }
}

TEST_F(GpuFunctions, SoftmaxCrossEntropyCheckBackward) {
  for (const auto& nc : std::vector<std::pair<int64_t, int64_t>>{{4, 3}, {3, 40}})
    expect_check_backward({"softmax_cross_entropy check_backward",
                           {uniform(DType::Float64, {nc.first, nc.second}, -2, 2, 25),
                            labels({nc.first}, int32_t(nc.second), 26)},
                           sce()});
}

TEST_F(GpuFunctions, MeanSquaredErrorAtEverySize) {
  for (DType dt : kDtypes) {
    std::vector<Shape> shapes;
    for (int64_t n : pointwise_sizes()) shapes.push_back({n});
    shapes.push_back({3, 5, 7});
    for (const Shape& s : shapes)
      expect_agreement({label("mean_squared_error", dt, s),
                        {uniform(dt, s, -2, 2, 27), uniform(dt, s, -2, 2, 28)},
                        mse()});
  }
}

TEST_F(GpuFunctions, MeanSquaredErrorCheckBackward) {
  expect_check_backward(
      {"mean_squared_error check_backward",
       {uniform(DType::Float64, {3, 4}, -1, 1, 29), uniform(DType::Float64, {3, 4}, -1, 1, 30)},
       mse()});
}

// BinaryHierarchicalSoftmax over the Huffman tree of `words` words with
// uneven counts (paths of different lengths), W ~ U(-1, 1) on the CPU.
FuncPtr hsm_function(int64_t in_size, int64_t words, DType dt) {
  std::vector<double> counts(static_cast<size_t>(words));
  for (int64_t w = 0; w < words; ++w) counts[static_cast<size_t>(w)] = 1.0 + double((w * 7) % 11);
  const std::vector<int32_t> tree = ops::hsm_create_huffman_tree(counts.data(), words);
  return ops::binary_hierarchical_softmax_new(in_size, tree.data(), words - 1, dt, nullptr);
}

TEST_F(GpuFunctions, BinaryHierarchicalSoftmaxAtEverySize) {
  // (batch, in_size, words): in_size below a warp, between, beyond a block.
  const int64_t shapes[][3] = {{1, 1, 2}, {31, 5, 9}, {67, 70, 37}, {9, 300, 5}};
  for (DType dt : kDtypes)
    for (const auto& s : shapes) {
      const Shape xs{s[0], s[1]};
      expect_agreement(
          {label("BinaryHierarchicalSoftmax", dt, xs) + " words " + std::to_string(s[2]),
           {uniform(dt, xs, -1, 1, 31), labels({s[0]}, int32_t(s[2]), 32)},
           apply_fn(),
           hsm_function(s[1], s[2], dt),
           true,
           dt == DType::Float32 ? 1e-4 : -1,
           dt == DType::Float32 ? 1e-4 : -1});
    }
}

// Under the determinism switch gW is added by a second kernel in sample
// order, without atomics.
TEST_F(GpuFunctions, BinaryHierarchicalSoftmaxDeterministic) {
  ch_config_set_deterministic(1);
  for (DType dt : kDtypes) {
    const Shape xs{67, 70};
    expect_agreement({label("BinaryHierarchicalSoftmax deterministic", dt, xs),
                      {uniform(dt, xs, -1, 1, 31), labels({67}, 37, 32)},
                      apply_fn(),
                      hsm_function(70, 37, dt),
                      true,
                      dt == DType::Float32 ? 1e-4 : -1,
                      dt == DType::Float32 ? 1e-4 : -1});
  }
  ch_config_set_deterministic(0);
}

TEST_F(GpuFunctions, BinaryHierarchicalSoftmaxCheckBackward) {
  const Case c{"BinaryHierarchicalSoftmax check_backward",
               {uniform(DType::Float64, {5, 4}, -1, 1, 33), labels({5}, 6, 34)},
               apply_fn(),
               hsm_function(4, 6, DType::Float64)};
  expect_check_backward(c);
  expect_parameter_gradients(c);
}

// ---- bad labels: the same status and message on cuda:0 as on the CPU

Array labels_with(int64_t n, int32_t classes, const std::vector<std::pair<int64_t, int32_t>>& bad) {
  Array t = labels({n}, classes, 35);
  for (const auto& b : bad) t.data<int32_t>()[b.first] = b.second;
  return t;
}

TEST_F(GpuFunctions, SoftmaxCrossEntropyBadLabelsGiveTheCpuError) {
  // The first bad label is reported, wherever the threads find them.
  expect_same_error({"softmax_cross_entropy label -1",
                     {uniform(DType::Float32, {10, 4}, -1, 1, 36), labels_with(10, 4, {{5, -1}})},
                     sce()},
                    CH_ERR_INVALID_ARGUMENT, "t[5] = -1 is out of range [0, 4)");
  expect_same_error({"softmax_cross_entropy two bad labels far apart",
                     {uniform(DType::Float32, {100003, 2}, -1, 1, 37),
                      labels_with(100003, 2, {{99999, -7}, {70001, 2}, {100002, 5}})},
                     sce()},
                    CH_ERR_INVALID_ARGUMENT, "t[70001] = 2 is out of range [0, 2)");
  expect_same_error({"accuracy label = n_classes",
                     {uniform(DType::Float64, {3, 5}, -1, 1, 38), labels_with(3, 5, {{2, 5}})},
                     [](const std::vector<VarPtr>& x, const FuncPtr&) {
                       return std::vector<VarPtr>{ops::accuracy(x[0], x[1])};
                     }},
                    CH_ERR_INVALID_ARGUMENT, "t[2] = 5 is out of range [0, 5)");
}

TEST_F(GpuFunctions, BinaryHierarchicalSoftmaxBadLabelsGiveTheCpuError) {
  const FuncPtr f = hsm_function(3, 6, DType::Float32);
  const Array x = uniform(DType::Float32, {1030, 3}, -1, 1, 39);
  expect_same_error(
      {"hsm label beyond the words", {x, labels_with(1030, 6, {{1027, 6}})}, apply_fn(), f},
      CH_ERR_INVALID_ARGUMENT, "label 6 at position 1027 is not a leaf");
  expect_same_error(
      {"hsm negative label", {x, labels_with(1030, 6, {{1029, -1}, {3, -2}})}, apply_fn(), f},
      CH_ERR_INVALID_ARGUMENT, "label -2 at position 3 is not a leaf");
  // A word inside the range that is no leaf: the tree's leaves are words 0 and 2.
  const int32_t tree[] = {-1, -3};
  const FuncPtr gap = ops::binary_hierarchical_softmax_new(3, tree, 1, DType::Float64, nullptr);
  expect_same_error({"hsm label between the leaves",
                     {uniform(DType::Float64, {4, 3}, -1, 1, 40), labels_with(4, 1, {{2, 1}})},
                     apply_fn(),
                     gap},
                    CH_ERR_INVALID_ARGUMENT, "label 1 at position 2 is not a leaf");
}

// Inputs on two devices are refused with CH_ERR_DEVICE before any kernel runs.
TEST_F(GpuFunctions, LossesRefuseInputsOnTwoDevices) {
  const Array x = uniform(DType::Float32, {4, 3}, -1, 1, 41);
  const Array t = labels({4}, 3, 42);
  const FuncPtr hsm = hsm_function(3, 3, DType::Float32);
  struct Mixed {
    const char* name;
    std::function<void()> run;
  };
  const Mixed cases[] = {
      {"softmax_cross_entropy",
       [&] {
         ops::softmax_cross_entropy(std::make_shared<VariableImpl>(x.to_device(gpu())),
                                    std::make_shared<VariableImpl>(t));
       }},
      {"mean_squared_error",
       [&] {
         ops::mean_squared_error(std::make_shared<VariableImpl>(x),
                                 std::make_shared<VariableImpl>(x.to_device(gpu())));
       }},
      {"BinaryHierarchicalSoftmax (parameters on cuda:0)",
       [&] {
         apply1(with_parameters_on(hsm, gpu()),
                {std::make_shared<VariableImpl>(x), std::make_shared<VariableImpl>(t)});
       }},
  };
  for (const Mixed& m : cases) {
    try {
      m.run();
      ADD_FAILURE() << m.name << ": no error";
    } catch (const chainerc::Error& e) {
      EXPECT_EQ(e.status(), CH_ERR_DEVICE) << m.name << ": " << e.what();
    }
  }
}

}  // namespace
}  // namespace gputest
