// CPU / emulated-GPU agreement of the kernels made parallel across the device
// and of the new index arithmetic (issue 46): broadcasting arithmetic of rank
// 1 to 6 forward and backward (OffsetCalc with merged axes, sum_to of the
// broadcast operand's gradient); transposes and concatenations.
#include "agreement.h"
#include "core/gradient_check.h"

namespace gputest {
namespace {

using namespace chainerc;

const DType kDtypes[] = {DType::Float32, DType::Float64};

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
