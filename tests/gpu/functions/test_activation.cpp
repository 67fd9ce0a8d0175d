// CPU / emulated-GPU agreement of the activation functions.
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

}  // namespace
}  // namespace gputest
