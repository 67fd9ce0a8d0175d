// CPU / emulated-GPU agreement of accuracy: random scores, scores with ties
// (the first maximum counts, as numpy.argmax), (N, C, ...) inputs viewed as
// (N, C'), N = 0 (NaN), known scores (accuracy 1 and 0).
#include <cmath>

#include "agreement.h"
#include "core/error.h"
#include "kernels/evaluation.h"
#include "kernels/loss.h"

namespace gputest {
namespace {

using namespace chainerc;

const DType kDtypes[] = {DType::Float32, DType::Float64};

std::vector<VarPtr> accuracy_build(const std::vector<VarPtr>& x, const FuncPtr&) {
  return {ops::accuracy(x[0], x[1])};
}

// Scores in {0, 1, 2}: many rows have their maximum more than once.
Array with_ties(DType dt, const Shape& s, uint32_t seed) {
  Array a = uniform(dt, s, 0, 3, seed);
  for (int64_t i = 0; i < a.size(); ++i) {
    if (dt == DType::Float32)
      a.data<float>()[i] = std::floor(a.data<float>()[i]);
    else
      a.data<double>()[i] = std::floor(a.data<double>()[i]);
  }
  return a;
}

// kernels::accuracy itself on cuda:0 against the CPU's, exactly (the op
// also validates the labels with kernels::find_bad_label, see below).
double accuracy_on(Device d, const Array& y, const Array& t) {
  const Array yd = y.to_device(d), td = t.to_device(d);
  Array out = Array::empty(y.dtype(), Shape{}, d);
  kernels::accuracy(yd, td, out);
  return out.to_device(cpu()).get(0);
}

TEST_F(GpuFunctions, AccuracyKernelAgreesOnEveryRowCount) {
  for (DType dt : kDtypes) {
    for (int64_t n : {int64_t{1}, int64_t{31}, int64_t{1025}, int64_t{20011}})
      for (int64_t c : {int64_t{1}, int64_t{3}, int64_t{10}}) {
        const Array t = labels({n}, static_cast<int32_t>(c), 2);
        // Labels in [0, c): with c = 3 about a third of the rows are right.
        for (const Array& y : {uniform(dt, {n, c}, -1, 1, 1), with_ties(dt, {n, c}, 3)}) {
          const double on_cpu = accuracy_on(cpu(), y, t), on_gpu = accuracy_on(gpu(), y, t);
          EXPECT_EQ(on_gpu, on_cpu) << dtype_name(dt) << " (" << n << ", " << c << ")";
          // Not a degenerate case (every row wrong) but for one row.
          if (n > 1) {
            EXPECT_GT(on_cpu, 0.0) << dtype_name(dt) << " (" << n << ", " << c << ")";
          }
        }
      }
    const Array y = uniform(dt, {31, 3, 4}, -1, 1, 5), t = labels({31}, 12, 6);
    EXPECT_EQ(accuracy_on(gpu(), y, t), accuracy_on(cpu(), y, t)) << "(N, C, ...)";
  }
}

TEST_F(GpuFunctions, AccuracyKernelOfNoRowsIsNaN) {
  EXPECT_TRUE(std::isnan(
      accuracy_on(gpu(), Array::empty(DType::Float32, {0, 3}), Array::empty(DType::Int32, {0}))));
}

// A perfect and a hopeless classifier: 1 and 0 exactly. The hopeless one has
// -1 at the label and 0 elsewhere: its first maximum is column 0, or column 1
// where the label is 0.
TEST_F(GpuFunctions, AccuracyKernelOfKnownScores) {
  const int64_t n = 1025, c = 5;
  Array y = Array::zeros(DType::Float64, {n, c});
  const Array t = labels({n}, static_cast<int32_t>(c), 7);
  for (int64_t i = 0; i < n; ++i) y.data<double>()[i * c + t.data<int32_t>()[i]] = 1.0;
  EXPECT_EQ(accuracy_on(gpu(), y, t), 1.0);
  for (int64_t i = 0; i < y.size(); ++i) y.data<double>()[i] = -y.data<double>()[i];
  EXPECT_EQ(accuracy_on(gpu(), y, t), 0.0);
}

// The function: ops::accuracy on cuda:0 against the CPU. Its label check
// (kernels::find_bad_label) is the loss group's kernel: without it on CUDA
// the function cannot run there, and this test says so.
TEST_F(GpuFunctions, AccuracyFunctionAgrees) {
  if (!kernels::find_bad_label.implemented_for(CH_DEVICE_CUDA))
    GTEST_SKIP() << "kernels::find_bad_label has no CUDA kernel in this build";
  for (DType dt : kDtypes)
    for (int64_t n : {int64_t{1}, int64_t{1025}}) {
      const std::string suffix = std::string(" ") + dtype_name(dt) + " n=" + std::to_string(n);
      expect_agreement({"accuracy" + suffix,
                        {uniform(dt, {n, 3}, -1, 1, 8), labels({n}, 3, 9)},
                        accuracy_build,
                        nullptr,
                        false,
                        0,
                        0});
      expect_agreement({"accuracy with ties" + suffix,
                        {with_ties(dt, {n, 3}, 10), labels({n}, 3, 11)},
                        accuracy_build,
                        nullptr,
                        false,
                        0,
                        0});
    }
  auto y =
      std::make_shared<VariableImpl>(uniform(DType::Float32, {4, 3}, -1, 1, 12).to_device(gpu()));
  Array bad = labels({4}, 3, 13);
  bad.data<int32_t>()[2] = 3;
  auto t = std::make_shared<VariableImpl>(bad.to_device(gpu()));
  try {
    // Checked on the device, reported when the result is read.
    ops::accuracy(y, t)->data.to_device(cpu());
    ADD_FAILURE() << "a label out of range was accepted on cuda:0";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), CH_ERR_INVALID_ARGUMENT) << e.what();
  }
}

}  // namespace
}  // namespace gputest
