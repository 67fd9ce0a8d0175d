// The elementwise functions of src/ops/manifest.py's `pointwise` cases on
// cuda:0 (the emulated devices in CI): values against NumPy's at the inputs of
// tests/ops/pointwise_table.inc (generated from the manifest), CPU / GPU
// agreement of forward and backward at every pointwise size, and
// check_backward on the device. A function added through the manifest is
// covered here from its manifest entry alone.
#include <cmath>
#include <string>
#include <vector>

#include "agreement.h"

namespace gputest {
namespace {

using namespace chainerc;

struct PointwiseCase {
  const char* name;
  VarPtr (*fn)(const VarPtr&);
  double low, high;
  int n;
  std::vector<double> table;  // NumPy's y, then dy/dx, at numpy.linspace(low, high, n)
};

#define CH_POINTWISE(name, low, high, n, ...) {#name, ops::name, low, high, n, {__VA_ARGS__}},
// A function with options: called with x and the options `opts`, "(, a, b)".
#define CH_PW_UNPACK(...) __VA_ARGS__
#define CH_POINTWISE_OPTS(name, opts, low, high, n, ...) \
  {#name,        [](const VarPtr& x) { return ops::name(x CH_PW_UNPACK opts); }, low, high, n,  \
   {__VA_ARGS__}},
const PointwiseCase kCases[] = {
#include "../../ops/pointwise_table.inc"
};
#undef CH_POINTWISE
#undef CH_POINTWISE_OPTS

const DType kDtypes[] = {DType::Float32, DType::Float64};

Build unary(VarPtr (*f)(const VarPtr&)) {
  return [f](const std::vector<VarPtr>& x, const FuncPtr&) { return std::vector<VarPtr>{f(x[0])}; };
}

TEST_F(GpuFunctions, ManifestPointwiseValuesMatchNumPyOnTheDevice) {
  for (const PointwiseCase& c : kCases)
    for (DType dt : kDtypes) {
      const int64_t n = c.n;
      Array x = Array::empty(dt, {n});
      for (int64_t i = 0; i < n; ++i) {
        const double v = i + 1 == n ? c.high : c.low + (c.high - c.low) * i / (n - 1);
        if (dt == DType::Float32)
          x.data<float>()[i] = static_cast<float>(v);
        else
          x.data<double>()[i] = v;
      }
      VarPtr y = c.fn(std::make_shared<VariableImpl>(x.to_device(gpu())));
      ASSERT_TRUE(y->data.device() == gpu())
          << c.name << " ran on " << y->data.device().to_string();
      Array host = y->data.to_device(cpu());
      const double tol = dt == DType::Float32 ? 2e-6 : 1e-11;  // the references carry 12 digits
      for (int64_t i = 0; i < n; ++i)
        EXPECT_NEAR(host.get(i), c.table[i], tol * (1 + std::fabs(c.table[i])))
            << c.name << " " << dtype_name(dt) << " at " << i;
    }
}

TEST_F(GpuFunctions, ManifestPointwiseAgreesWithTheCpuAtEverySize) {
  for (const PointwiseCase& c : kCases)
    for (DType dt : kDtypes)
      for (int64_t n : pointwise_sizes())
        expect_agreement({std::string(c.name) + " " + dtype_name(dt) + " n=" + std::to_string(n),
                          {uniform(dt, {n}, c.low, c.high, 11)},
                          unary(c.fn)});
}

TEST_F(GpuFunctions, ManifestPointwiseCheckBackwardOnTheDevice) {
  for (const PointwiseCase& c : kCases)
    expect_check_backward({std::string(c.name) + " float64",
                           {uniform(DType::Float64, {2, 3}, c.low, c.high, 12)},
                           unary(c.fn)},
                          1e-6, 1e-8, 1e-7);
}

}  // namespace
}  // namespace gputest
