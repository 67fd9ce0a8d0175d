// CPU / emulated-GPU agreement of the activation functions: the pointwise
// ones, softmax (a block per row and a thread per column), PReLU (with its
// parameter's gradient) and the LSTM cell.
#include "agreement.h"

namespace gputest {
namespace {

using namespace chainerc;

const DType kDtypes[] = {DType::Float32, DType::Float64};

VarPtr leaky(const VarPtr& x) { return ops::leaky_relu(x, 0.2); }

using Unary = VarPtr (*)(const VarPtr&);
const std::pair<const char*, Unary> kPointwise[] = {
    {"relu", ops::relu}, {"leaky_relu", leaky}, {"sigmoid", ops::sigmoid}, {"tanh", ops::tanh}};

Build unary(Unary f) {
  return [f](const std::vector<VarPtr>& x, const FuncPtr&) { return std::vector<VarPtr>{f(x[0])}; };
}

TEST_F(GpuFunctions, PointwiseActivationsAtEverySize) {
  for (const auto& op : kPointwise)
    for (DType dt : kDtypes)
      for (int64_t n : pointwise_sizes())
        expect_agreement({std::string(op.first) + " " + dtype_name(dt) + " n=" + std::to_string(n),
                          {away_from_zero(dt, {n}, 0.01, 4, 1)},
                          unary(op.second)});
}

TEST_F(GpuFunctions, PointwiseActivationsCheckBackwardOnTheDevice) {
  for (const auto& op : kPointwise)
    expect_check_backward(
        {op.first, {away_from_zero(DType::Float64, {3, 5}, 0.1, 2, 2)}, unary(op.second)});
}

// Softmax over axis 1: (N, C) rows of at least 64 channels take the block-per-
// row kernel, narrower rows and (N, C, ...) arrays the thread-per-column one;
// {13, 7919} (rows) and {1613, 62} (columns) are ~1e5 elements with more
// rows than the emulator's grid.
TEST_F(GpuFunctions, SoftmaxOnEveryLayout) {
  const Shape shapes[] = {{1, 1},     {3, 1},     {1, 31},   {3, 31},     {4, 64},        {3, 1025},
                          {13, 7919}, {1613, 62}, {2, 3, 5}, {3, 31, 33}, {2, 1025, 1, 3}};
  for (DType dt : kDtypes)
    for (const Shape& s : shapes)
      expect_agreement({std::string("softmax ") + dtype_name(dt) + " " + s.to_string(),
                        {uniform(dt, s, -4, 4, 3)},
                        unary(ops::softmax)});
}

TEST_F(GpuFunctions, SoftmaxOfLargeValuesSubtractsTheMaximum) {
  // exp(1000) overflows: the result is finite only if the maximum is taken out.
  for (DType dt : kDtypes)
    for (const Shape& s : {Shape{3, 100}, Shape{3, 5, 7}})
      expect_agreement({std::string("softmax large ") + dtype_name(dt) + " " + s.to_string(),
                        {uniform(dt, s, 990, 1000, 4)},
                        unary(ops::softmax)});
}

// PReLU with a random W (not the default 0.25, so that a kernel reading the
// wrong element of W fails): W of shape () broadcast over everything, and W
// over axes 1.. with trailing axes after it.
FuncPtr prelu_with_random_w(const Shape& w_shape, DType dt, uint32_t seed) {
  FuncPtr f = ops::prelu_new(w_shape, dt, 0.25);
  (*f->parameters)[0].param = uniform(dt, w_shape, 0.05, 0.9, seed);
  return f;
}

Build apply_fn() {
  return [](const std::vector<VarPtr>& x, const FuncPtr& fn) {
    return chainerc::apply_function(fn, {x[0]});
  };
}

TEST_F(GpuFunctions, PReLUWithItsParameterGradient) {
  std::vector<std::pair<Shape, Shape>> cases;  // (W, x)
  for (int64_t n : pointwise_sizes()) cases.push_back({Shape{}, Shape{n}});
  cases.push_back({Shape{31}, Shape{3, 31, 5}});
  cases.push_back({Shape{1025}, Shape{2, 1025}});  // a thread per element of W
  cases.push_back({Shape{67}, Shape{3, 67, 31}});  // a block per element of W
  cases.push_back({Shape{3, 4}, Shape{2, 3, 4, 7}});
  cases.push_back({Shape{5}, Shape{1, 5, 20011}});  // ~1e5 summed per element of W
  for (DType dt : kDtypes)
    for (const auto& c : cases) {
      const bool big = c.second.size() > 10000;
      expect_agreement({std::string("PReLU ") + dtype_name(dt) + " W " + c.first.to_string() +
                            " x " + c.second.to_string(),
                        {away_from_zero(dt, c.second, 0.01, 2, 5)},
                        apply_fn(),
                        prelu_with_random_w(c.first, dt, 6),
                        true,
                        -1,
                        big && dt == DType::Float32 ? 1e-3 : -1});
    }
}

// W's gradient accumulates: the function applied twice in one graph (a
// block per element of W and a thread per element).
TEST_F(GpuFunctions, PReLUParameterGradientAccumulates) {
  for (DType dt : kDtypes)
    for (const Shape& x_shape : {Shape{3, 67, 31}, Shape{2, 67}})
      expect_agreement({std::string("PReLU twice ") + dtype_name(dt) + " x " + x_shape.to_string(),
                        {away_from_zero(dt, x_shape, 0.01, 2, 16)},
                        [](const std::vector<VarPtr>& x, const FuncPtr& fn) {
                          VarPtr a = chainerc::apply_function(fn, {x[0]})[0];
                          // A clone shares the parameters.
                          VarPtr b =
                              chainerc::apply_function(fn->clone(), {ops::mul_scalar(x[0], -2)})[0];
                          return std::vector<VarPtr>{ops::add(a, b)};
                        },
                        prelu_with_random_w(Shape{67}, dt, 17)});
}

// The LSTM cell: c_prev (N, U, ...) and x (N, 4U, ...), outputs c and h.
std::vector<VarPtr> lstm_build(const std::vector<VarPtr>& x, const FuncPtr&) {
  return ops::lstm(x[0], x[1]);
}

TEST_F(GpuFunctions, LstmCellForwardAndBackward) {
  const std::vector<std::pair<Shape, Shape>> shapes = {{{1, 1}, {1, 4}},
                                                       {{3, 31}, {3, 124}},
                                                       {{2, 1025}, {2, 4100}},
                                                       {{2, 3, 5}, {2, 12, 5}},
                                                       {{97, 1031}, {97, 4124}}};
  for (DType dt : kDtypes)
    for (const auto& s : shapes)
      expect_agreement({std::string("lstm ") + dtype_name(dt) + " c " + s.first.to_string(),
                        {uniform(dt, s.first, -2, 2, 7), uniform(dt, s.second, -3, 3, 8)},
                        lstm_build});
}

// Empty arrays: the kernels launch nothing and the shapes come through.
TEST_F(GpuFunctions, EmptyActivations) {
  for (DType dt : kDtypes) {
    for (const Shape& s : {Shape{0, 5}, Shape{3, 0}, Shape{2, 3, 0}})
      expect_agreement({std::string("softmax ") + dtype_name(dt) + " " + s.to_string(),
                        {uniform(dt, s, -1, 1, 20)},
                        unary(ops::softmax)});
    expect_agreement({std::string("PReLU empty ") + dtype_name(dt),
                      {uniform(dt, {0, 3}, -1, 1, 21)},
                      apply_fn(),
                      prelu_with_random_w(Shape{3}, dt, 22)});
    expect_agreement({std::string("lstm empty ") + dtype_name(dt),
                      {uniform(dt, {0, 3}, -1, 1, 23), uniform(dt, {0, 12}, -1, 1, 24)},
                      lstm_build});
  }
}

TEST_F(GpuFunctions, SoftmaxPReLUAndLstmCheckBackwardOnTheDevice) {
  const DType dt = DType::Float64;
  expect_check_backward({"softmax", {uniform(dt, {3, 5}, -2, 2, 9)}, unary(ops::softmax)});
  expect_check_backward({"softmax rows", {uniform(dt, {1, 64}, -2, 2, 10)}, unary(ops::softmax)});
  expect_check_backward(
      {"softmax (N, C, ...)", {uniform(dt, {2, 3, 4}, -2, 2, 11)}, unary(ops::softmax)});
  expect_check_backward({"PReLU",
                         {away_from_zero(dt, {2, 3, 4}, 0.1, 2, 12)},
                         apply_fn(),
                         prelu_with_random_w(Shape{3}, dt, 13)});
  expect_check_backward(
      {"lstm", {uniform(dt, {1, 2, 2}, -1, 1, 14), uniform(dt, {1, 8, 2}, -1, 1, 15)}, lstm_build});
}

}  // namespace
}  // namespace gputest
