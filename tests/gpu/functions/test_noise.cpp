// CPU / emulated-GPU agreement of dropout: both devices draw the mask from
// the same counter-based hash (kernels/pointwise/noise.h), so for one seed
// the outputs and the gradients are equal bit for bit.
#include <cmath>

#include "agreement.h"
#include "core/random.h"

namespace gputest {
namespace {

using namespace chainerc;

const DType kDtypes[] = {DType::Float32, DType::Float64};

// Reseeds the engine's generator before each application, so that every run
// (and every evaluation of check_backward) draws the same mask.
Build dropout_seeded(double ratio, uint64_t seed) {
  return [ratio, seed](const std::vector<VarPtr>& x, const FuncPtr&) {
    chainerc::random::seed(seed);
    return std::vector<VarPtr>{ops::dropout(x[0], ratio, true)};
  };
}

TEST_F(GpuFunctions, DropoutMasksEqualTheCpusBitForBit) {
  for (double ratio : {0.0, 0.5, 0.9})
    for (DType dt : kDtypes)
      for (int64_t n : {int64_t{0}, int64_t{1}, int64_t{31}, int64_t{1025}, int64_t{100003}})
        expect_agreement({std::string("dropout ") + std::to_string(ratio) + " " + dtype_name(dt) +
                              " n=" + std::to_string(n),
                          {uniform(dt, {n}, 0.5, 2, 1)},
                          dropout_seeded(ratio, 1234 + static_cast<uint64_t>(n)),
                          nullptr,
                          true,
                          0,
                          0});
}

// The mask keeps about 1 - ratio of the elements, scaled by 1 / (1 - ratio),
// on the device (a binomial count over 1e5 elements: 6 standard deviations).
TEST_F(GpuFunctions, DropoutOnTheDeviceKeepsTheExpectedFraction) {
  const int64_t n = 100003;
  for (double ratio : {0.2, 0.5, 0.9}) {
    chainerc::random::seed(99);
    Array ones = Array::empty(DType::Float64, {n});
    ones.fill(1.0);
    auto x = std::make_shared<VariableImpl>(ones.to_device(gpu()));
    const Array y = ops::dropout(x, ratio, true)->data.to_device(cpu());
    int64_t kept = 0;
    for (int64_t i = 0; i < n; ++i) {
      const double v = y.data<double>()[i];
      if (v != 0) {
        ++kept;
        ASSERT_DOUBLE_EQ(v, 1.0 / (1.0 - ratio)) << "element " << i;
      }
    }
    const double expected = n * (1 - ratio), sd = std::sqrt(n * ratio * (1 - ratio));
    EXPECT_NEAR(static_cast<double>(kept), expected, 6 * sd) << "ratio " << ratio;
  }
}

TEST_F(GpuFunctions, DropoutCheckBackwardOnTheDevice) {
  expect_check_backward(
      {"dropout", {uniform(DType::Float64, {3, 7}, -1, 1, 2)}, dropout_seeded(0.4, 7)});
}

}  // namespace
}  // namespace gputest
