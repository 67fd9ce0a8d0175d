// CPU / emulated-GPU agreement of the normalization functions:
// BatchNormalization in train, test and finetune modes (outputs, the input's
// gradient, gamma's and beta's gradients, and the running averages, which
// live on the device with the parameters), and local_response_normalization;
// float32 and float64 on small odd shapes and one large one; check_backward
// on cuda:0.
#include "agreement.h"
#include "core/gradient_check.h"
#include "train/function_set.h"

namespace gputest {
namespace {

using namespace chainerc;

const DType kDtypes[] = {DType::Float32, DType::Float64};

enum class Mode { Train, Test, Finetune };
const char* mode_name(Mode m) {
  return m == Mode::Train ? "train" : m == Mode::Test ? "test" : "finetune";
}

// A BatchNormalization over `size` with random gamma, beta and running
// averages (so that every parameter and test mode's statistics matter).
FuncPtr make_bn(const Shape& size, DType dt, uint32_t seed) {
  FuncPtr bn = ops::batch_normalization_new(size, 0.9, 2e-5, dt);
  (*bn->parameters)[0].param = uniform(dt, size, 0.5, 1.5, seed);
  (*bn->parameters)[1].param = uniform(dt, size, -1, 1, seed + 1);
  auto state = ops::batch_normalization_state(bn);
  state->avg_mean = uniform(dt, size, -0.5, 0.5, seed + 2);
  state->avg_var = uniform(dt, size, 0.5, 2, seed + 3);
  return bn;
}

Build bn_build(Mode mode) {
  return [mode](const std::vector<VarPtr>& x, const FuncPtr& fn) {
    FuncPtr node = ops::batch_normalization_node(fn, mode != Mode::Test, mode == Mode::Finetune);
    return std::vector<VarPtr>{apply1(node, {x[0]})};
  };
}

// (x's shape, the normalized size): statistics over L = x's first axis and R
// = the trailing axes after size.
const std::pair<Shape, Shape> kBnShapes[] = {
    {{5, 3}, {3}},           // R = 1
    {{4, 3, 5, 7}, {3}},     // NCHW, per channel
    {{3, 2, 3, 4}, {2, 3}},  // a 2-d feature shape
    {{1, 4, 31}, {4}},       // one sample
    {{7, 2, 1025}, {2}},     // many elements per channel (the block's loop)
    {{2, 37, 3}, {37}},      // more channels than the emulator's grid of blocks
};

TEST_F(GpuFunctions, BatchNormalizationInEveryMode) {
  for (Mode mode : {Mode::Train, Mode::Test, Mode::Finetune})
    for (DType dt : kDtypes)
      for (const auto& s : kBnShapes) {
        Case c{std::string("batch_normalization ") + mode_name(mode) + " " + dtype_name(dt) + " " +
                   s.first.to_string(),
               {uniform(dt, s.first, -2, 3, 1)},
               bn_build(mode),
               make_bn(s.second, dt, 10)};
        // float32 sums of up to 14350 elements: the CPU adds rows in float,
        // the device in double.
        if (dt == DType::Float32) c.rtol = 1e-3, c.atol = 1e-4;
        expect_agreement(c);
      }
}

// Empty batches and empty trailing axes: test mode (train and finetune
// refuse a batch without samples).
TEST_F(GpuFunctions, BatchNormalizationOfEmptyArrays) {
  for (DType dt : kDtypes)
    for (const Shape& s : {Shape{0, 3}, Shape{2, 3, 0}})
      expect_agreement(
          {std::string("batch_normalization test ") + dtype_name(dt) + " " + s.to_string(),
           {uniform(dt, s, -1, 1, 5)},
           bn_build(Mode::Test),
           make_bn({3}, dt, 6)});
}

// Both devices' running averages over train steps, then finetune steps (the
// population statistics), then the test mode's outputs from them; the set's
// to_gpu moves the parameters and the averages follow them to the device.
TEST_F(GpuFunctions, BatchNormalizationRunningAveragesLiveOnTheDevice) {
  for (DType dt : kDtypes) {
    SCOPED_TRACE(dtype_name(dt));
    const Shape size{3};
    FuncPtr on_cpu = make_bn(size, dt, 20), on_gpu = make_bn(size, dt, 20);
    FunctionSet set;
    set.add("bn", SetMember{on_gpu, nullptr}, "test");
    set.move_parameters(gpu());
    for (const Parameter& p : *on_gpu->parameters) {
      EXPECT_EQ(p.param.device(), gpu());
      EXPECT_EQ(p.grad.device(), gpu());
    }
    const double tol = dt == DType::Float32 ? 1e-5 : 1e-12;
    // on_gpu is applied on `device` (where its parameters are).
    auto step = [&](bool train, bool finetune, uint32_t seed, Device device = gpu()) {
      Array x = uniform(dt, {4, 3, 5, 3}, -1, 2, seed);
      VarPtr yc = apply1(ops::batch_normalization_node(on_cpu, train, finetune),
                         {std::make_shared<VariableImpl>(x)});
      VarPtr yg = apply1(ops::batch_normalization_node(on_gpu, train, finetune),
                         {std::make_shared<VariableImpl>(x.to_device(device))});
      EXPECT_EQ(yg->data.device(), device);
      std::string message;
      EXPECT_TRUE(allclose(yg->data.to_device(cpu()), yc->data, tol, tol, nullptr, &message))
          << message;
    };
    for (uint32_t i = 0; i < 3; ++i) step(true, false, 30 + i);
    for (uint32_t i = 0; i < 3; ++i) step(false, true, 40 + i);
    auto sc = ops::batch_normalization_state(on_cpu), sg = ops::batch_normalization_state(on_gpu);
    EXPECT_EQ(sc->n, 3);
    EXPECT_EQ(sg->n, 3);
    ASSERT_EQ(sg->avg_mean.device(), gpu());
    ASSERT_EQ(sg->avg_var.device(), gpu());
    std::string message;
    EXPECT_TRUE(allclose(sg->avg_mean.to_device(cpu()), sc->avg_mean, tol, tol, nullptr, &message))
        << "avg_mean: " << message;
    EXPECT_TRUE(allclose(sg->avg_var.to_device(cpu()), sc->avg_var, tol, tol, nullptr, &message))
        << "avg_var: " << message;
    step(false, false, 50);
    // Back to the CPU: the averages follow at the next application.
    set.move_parameters(cpu());
    step(false, false, 51, cpu());
    EXPECT_TRUE(sg->avg_mean.device().is_cpu());
  }
}

TEST_F(GpuFunctions, BatchNormalizationCheckBackwardOnTheDevice) {
  for (Mode mode : {Mode::Train, Mode::Test, Mode::Finetune})
    expect_check_backward({std::string("batch_normalization ") + mode_name(mode),
                           {uniform(DType::Float64, {3, 2, 3}, -1, 2, 60)},
                           bn_build(mode),
                           make_bn({2}, DType::Float64, 61)});
}

Build lrn(int64_t n, double k, double alpha, double beta) {
  return [=](const std::vector<VarPtr>& x, const FuncPtr&) {
    return std::vector<VarPtr>{ops::local_response_normalization(x[0], n, k, alpha, beta)};
  };
}

TEST_F(GpuFunctions, LocalResponseNormalization) {
  for (DType dt : kDtypes) {
    // Chainer's defaults, and a large alpha so that the window terms matter.
    for (const Shape& s : {Shape{2, 7, 3, 5}, Shape{3, 1, 31}, Shape{1, 9}}) {
      expect_agreement({std::string("lrn defaults ") + dtype_name(dt) + " " + s.to_string(),
                        {uniform(dt, s, -2, 2, 70)},
                        lrn(5, 2, 1e-4, 0.75)});
      expect_agreement({std::string("lrn n=3 alpha=0.5 ") + dtype_name(dt) + " " + s.to_string(),
                        {uniform(dt, s, -2, 2, 71)},
                        lrn(3, 1, 0.5, 0.6)});
    }
    expect_agreement({std::string("lrn ") + dtype_name(dt) + " (4, 31, 27, 29)",
                      {uniform(dt, {4, 31, 27, 29}, -2, 2, 72)},
                      lrn(5, 2, 0.1, 0.75)});
  }
}

TEST_F(GpuFunctions, LocalResponseNormalizationOfEmptyArrays) {
  for (DType dt : kDtypes)
    for (const Shape& s : {Shape{0, 5, 3}, Shape{2, 5, 0}})
      expect_agreement({std::string("lrn ") + dtype_name(dt) + " " + s.to_string(),
                        {uniform(dt, s, -1, 1, 75)},
                        lrn(5, 2, 1e-4, 0.75)});
}

TEST_F(GpuFunctions, LocalResponseNormalizationCheckBackwardOnTheDevice) {
  expect_check_backward(
      {"lrn", {uniform(DType::Float64, {2, 6, 2, 3}, -2, 2, 73)}, lrn(3, 1, 0.5, 0.6)});
  expect_check_backward(
      {"lrn n=4", {uniform(DType::Float64, {1, 7, 5}, -2, 2, 74)}, lrn(4, 2, 0.3, 0.75)});
}

}  // namespace
}  // namespace gputest
