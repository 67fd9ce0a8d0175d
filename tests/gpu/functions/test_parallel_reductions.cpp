// CPU / emulated-GPU agreement of the kernels made parallel across the device
// and of the new index arithmetic (issue 46): BatchNormalization's statistics
// over batches of 1 to 4099 (the per-channel and the R = 1 layouts, one and
// many ranges per channel, 16-byte packs and the scalar pass), on data far
// from zero (where sum(x^2) - sum(x)^2 / m in float32 would lose every
// digit); sums along outer axes (the column kernel, one and many ranges);
// broadcasting arithmetic of rank 1 to 6 forward and backward (OffsetCalc
// with merged axes, sum_to of the broadcast operand's gradient); transposes
// and concatenations.
#include "agreement.h"
#include "core/gradient_check.h"
#include "train/function_set.h"

namespace gputest {
namespace {

using namespace chainerc;

const DType kDtypes[] = {DType::Float32, DType::Float64};

FuncPtr make_bn(const Shape& size, DType dt, uint32_t seed) {
  FuncPtr bn = ops::batch_normalization_new(size, 0.9, 2e-5, dt);
  (*bn->parameters)[0].param = uniform(dt, size, 0.5, 1.5, seed);
  (*bn->parameters)[1].param = uniform(dt, size, -1, 1, seed + 1);
  auto state = ops::batch_normalization_state(bn);
  state->avg_mean = uniform(dt, size, -0.5, 0.5, seed + 2);
  state->avg_var = uniform(dt, size, 0.5, 2, seed + 3);
  return bn;
}

// (x's shape, the normalized size).
const std::pair<Shape, Shape> kBatchShapes[] = {
    {{1, 5, 7}, {5}},       // one sample
    {{2, 3}, {3}},          // R = 1, two rows
    {{257, 5}, {5}},        // R = 1, several ranges of rows
    {{4099, 3}, {3}},       // R = 1, a large batch
    {{300, 40}, {40}},      // R = 1, a partial second block of 32 channels
    {{64, 3, 300}, {3}},    // several ranges per channel
    {{3, 2, 5000}, {2}},    // few samples, long rows
    {{33, 2, 8}, {2}},      // R a multiple of the pack width: the packed pass
    {{9, 2, 6}, {2}},       // R a multiple of two only (packs of float64)
    {{5, 2, 3, 4}, {2, 3}}  // a 2-d feature shape
};

TEST_F(GpuFunctions, BatchNormalizationParallelOverTheBatch) {
  for (int mode = 0; mode < 3; ++mode)  // train, test, finetune
    for (DType dt : kDtypes)
      for (const auto& s : kBatchShapes) {
        Case c{std::string("batch_normalization mode ") + std::to_string(mode) + " " +
                   dtype_name(dt) + " " + s.first.to_string(),
               {uniform(dt, s.first, -2, 3, 31)},
               [mode](const std::vector<VarPtr>& x, const FuncPtr& fn) {
                 FuncPtr node = ops::batch_normalization_node(fn, mode != 1, mode == 2);
                 return std::vector<VarPtr>{apply1(node, {x[0]})};
               },
               make_bn(s.second, dt, 40)};
        // The CPU adds each row in float32, the device in double.
        if (dt == DType::Float32) c.rtol = 1e-3, c.atol = 1e-4;
        expect_agreement(c);
      }
}

// Data at 1000 +- 1: the statistics are exact to the dtype on both sides
// (the CPU subtracts the mean before squaring; the device sums deviations
// from a shift), so the outputs agree at the usual tolerance.
TEST_F(GpuFunctions, BatchNormalizationStatisticsFarFromZero) {
  for (DType dt : kDtypes)
    for (const Shape& x : {Shape{4099, 3}, Shape{2049, 2}}) {
      Case c{
          std::string("batch_normalization far from zero ") + dtype_name(dt) + " " + x.to_string(),
          {uniform(dt, x, 999, 1001, 32)},
          [](const std::vector<VarPtr>& v, const FuncPtr& fn) {
            return std::vector<VarPtr>{
                apply1(ops::batch_normalization_node(fn, true, false), {v[0]})};
          },
          make_bn(Shape{x[1]}, dt, 50)};
      if (dt == DType::Float32) c.rtol = 1e-3, c.atol = 1e-3;
      expect_agreement(c);
    }
}

// The running variance after one step on data far from zero: what a naive
// one-pass float32 variance gets wrong by orders of magnitude.
TEST_F(GpuFunctions, BatchNormalizationRunningVarianceFarFromZero) {
  const Shape x_shape{4099, 2};
  const Array x = uniform(DType::Float32, x_shape, 9999, 10001, 33);
  // The variance in double on the host, the unbiased one as the average moves.
  const float* px = x.data<float>();
  for (int64_t c = 0; c < 2; ++c) {
    double mean = 0, m2 = 0;
    for (int64_t l = 0; l < x_shape[0]; ++l) mean += px[l * 2 + c];
    mean /= static_cast<double>(x_shape[0]);
    for (int64_t l = 0; l < x_shape[0]; ++l) m2 += (px[l * 2 + c] - mean) * (px[l * 2 + c] - mean);
    const double var = m2 / static_cast<double>(x_shape[0] - 1);
    FuncPtr on_gpu = ops::batch_normalization_new(Shape{2}, 0.0, 2e-5, DType::Float32);
    FunctionSet set;
    set.add("bn", SetMember{on_gpu, nullptr}, "test");
    set.move_parameters(gpu());
    auto state = ops::batch_normalization_state(on_gpu);
    apply1(ops::batch_normalization_node(on_gpu, true, false),
           {std::make_shared<VariableImpl>(x.to_device(gpu()))});
    const Array avg_var = state->avg_var.to_device(cpu());
    const Array avg_mean = state->avg_mean.to_device(cpu());
    // decay 0: the averages are this batch's statistics.
    EXPECT_NEAR(avg_var.data<float>()[c], var, 1e-5 * var) << "channel " << c;
    EXPECT_NEAR(avg_mean.data<float>()[c], mean, 1e-3) << "channel " << c;
  }
}

// sum along the outer axes of (N, C): the column kernel with one range (few
// rows) and many (the rows cut so that the device fills), and partial
// blocks of 32 columns.
TEST_F(GpuFunctions, SumsAlongOuterAxes) {
  for (DType dt : kDtypes)
    for (int64_t n : {1, 7, 1025, 5000})
      for (int64_t c : {2, 33, 300}) {
        expect_agreement({std::string("sum_axis 0 ") + dtype_name(dt) + " (" + std::to_string(n) +
                              ", " + std::to_string(c) + ")",
                          {uniform(dt, {n, c}, -1, 1, 61)},
                          [](const std::vector<VarPtr>& x, const FuncPtr&) {
                            return std::vector<VarPtr>{ops::sum_axis(x[0], 0, false)};
                          },
                          nullptr,
                          true,
                          dt == DType::Float32 ? 1e-4 : -1,
                          1e-4});
      }
  // Outer axes of a rank-3 array: (N, H) summed, C kept, C inner after merging.
  for (DType dt : kDtypes)
    expect_agreement({std::string("sum over two outer axes ") + dtype_name(dt),
                      {uniform(dt, {30, 40, 17}, -1, 1, 62)},
                      [](const std::vector<VarPtr>& x, const FuncPtr&) {
                        return std::vector<VarPtr>{
                            ops::sum_axis(ops::sum_axis(x[0], 0, false), 0, false)};
                      },
                      nullptr,
                      true,
                      dt == DType::Float32 ? 1e-4 : -1,
                      1e-4});
}

// Broadcasting add and mul of rank 1 to 6, forward and backward: the
// gradient of the broadcast operand is a sum_to over the axes it spans.
TEST_F(GpuFunctions, BroadcastingOfRankOneToSix) {
  const std::vector<std::pair<Shape, Shape>> shapes = {
      {{7}, {1}},
      {{5, 1}, {1, 9}},
      {{3, 4, 5}, {4, 1}},
      {{2, 1, 3, 5}, {2, 7, 1, 5}},
      {{2, 3, 1, 4, 5}, {3, 6, 1, 1}},
      {{2, 1, 3, 1, 4, 3}, {1, 5, 1, 2, 4, 1}},
      {{1, 2, 1, 2, 1, 2}, {3, 1, 3, 1, 3, 1}},
  };
  for (DType dt : kDtypes)
    for (const auto& s : shapes)
      for (int op = 0; op < 2; ++op)
        expect_agreement({std::string(op ? "mul " : "add ") + dtype_name(dt) + " " +
                              s.first.to_string() + " with " + s.second.to_string(),
                          {uniform(dt, s.first, -2, 2, 63), uniform(dt, s.second, 0.5, 2, 64)},
                          [op](const std::vector<VarPtr>& x, const FuncPtr&) {
                            return std::vector<VarPtr>{op ? ops::mul(x[0], x[1])
                                                          : ops::add(x[0], x[1])};
                          }});
  // broadcast_to of rank 6, whose backward is sum_to.
  for (DType dt : kDtypes)
    expect_agreement(
        {std::string("broadcast_to rank 6 ") + dtype_name(dt),
         {uniform(dt, {3, 1, 4, 1, 1, 5}, -1, 1, 65)},
         [](const std::vector<VarPtr>& x, const FuncPtr&) {
           return std::vector<VarPtr>{ops::broadcast_to(x[0], Shape{3, 2, 4, 3, 2, 5})};
         }});
}

TEST_F(GpuFunctions, TransposesAndConcatenationsThroughFastDivision) {
  for (DType dt : kDtypes) {
    const int32_t axes[] = {2, 0, 3, 1};
    expect_agreement({std::string("transpose (2, 0, 3, 1) ") + dtype_name(dt),
                      {uniform(dt, {3, 5, 7, 2}, -1, 1, 66)},
                      [&axes](const std::vector<VarPtr>& x, const FuncPtr&) {
                        return std::vector<VarPtr>{ops::transpose(x[0], axes, 4)};
                      }});
    expect_agreement({std::string("concat axis 1 ") + dtype_name(dt),
                      {uniform(dt, {4, 3, 5}, -1, 1, 67), uniform(dt, {4, 1, 5}, -1, 1, 68),
                       uniform(dt, {4, 7, 5}, -1, 1, 69)},
                      [](const std::vector<VarPtr>& x, const FuncPtr&) {
                        return std::vector<VarPtr>{ops::concat({x[0], x[1], x[2]}, 1)};
                      }});
  }
}

}  // namespace
}  // namespace gputest
