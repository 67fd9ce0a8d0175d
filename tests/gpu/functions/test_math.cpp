// CPU / emulated-GPU agreement of the math functions: arithmetic (with
// broadcasting and with scalars), neg, exp, log, pow, sum, sum along an axis,
// matmul and batch_matmul in every transposition.
#include "agreement.h"

namespace gputest {
namespace {

using namespace chainerc;

const DType kDtypes[] = {DType::Float32, DType::Float64};

using Binary = VarPtr (*)(const VarPtr&, const VarPtr&);
struct NamedBinary {
  const char* name;
  Binary f;
};
const NamedBinary kBinary[] = {
    {"add", ops::add}, {"sub", ops::sub}, {"mul", ops::mul}, {"div", ops::div}};

Build binary(Binary f) {
  return [f](const std::vector<VarPtr>& x, const FuncPtr&) {
    return std::vector<VarPtr>{f(x[0], x[1])};
  };
}

TEST_F(GpuFunctions, ArithmeticOfEqualShapesAtEverySize) {
  for (const NamedBinary& op : kBinary)
    for (DType dt : kDtypes)
      for (int64_t n : pointwise_sizes()) {
        Case c{std::string(op.name) + " " + dtype_name(dt) + " n=" + std::to_string(n),
               {uniform(dt, {n}, -2, 2, 1), uniform(dt, {n}, 0.5, 2, 2)},
               binary(op.f)};
        expect_agreement(c);
      }
}

TEST_F(GpuFunctions, ArithmeticWithBroadcasting) {
  const std::vector<std::pair<Shape, Shape>> shapes = {
      {{3, 1, 5}, {4, 1}}, {{1}, {7, 33}}, {{2, 3, 4}, {4}}, {{5, 1}, {1, 1025}}, {{}, {31}}};
  for (const NamedBinary& op : kBinary)
    for (DType dt : kDtypes)
      for (const auto& s : shapes) {
        Case c{std::string(op.name) + " " + dtype_name(dt) + " " + s.first.to_string() + " with " +
                   s.second.to_string(),
               {uniform(dt, s.first, -2, 2, 3), uniform(dt, s.second, 0.5, 2, 4)},
               binary(op.f)};
        expect_agreement(c);
      }
}

using Scalar = VarPtr (*)(const VarPtr&, double);
struct NamedScalar {
  const char* name;
  Scalar f;
  double s;
};
const NamedScalar kScalar[] = {
    {"add_scalar", ops::add_scalar, 1.5},   {"sub_scalar", ops::sub_scalar, 0.25},
    {"rsub_scalar", ops::rsub_scalar, 2},   {"mul_scalar", ops::mul_scalar, -3},
    {"div_scalar", ops::div_scalar, 7},     {"rdiv_scalar", ops::rdiv_scalar, 2},
    {"pow_scalar", ops::pow_scalar, 2},     {"pow_scalar 2.5", ops::pow_scalar, 2.5},
    {"rpow_scalar", ops::rpow_scalar, 1.7},
};

TEST_F(GpuFunctions, ScalarArithmeticAtEverySize) {
  for (const NamedScalar& op : kScalar)
    for (DType dt : kDtypes)
      for (int64_t n : pointwise_sizes()) {
        const Scalar f = op.f;
        const double s = op.s;
        Case c{std::string(op.name) + " " + dtype_name(dt) + " n=" + std::to_string(n),
               {uniform(dt, {n}, 0.5, 2, 5)},
               [f, s](const std::vector<VarPtr>& x, const FuncPtr&) {
                 return std::vector<VarPtr>{f(x[0], s)};
               }};
        expect_agreement(c);
      }
}

TEST_F(GpuFunctions, NegExpLogAtEverySize) {
  using Unary = VarPtr (*)(const VarPtr&);
  const std::pair<const char*, Unary> fs[] = {
      {"neg", ops::neg}, {"exp", ops::exp}, {"log", ops::log}};
  for (const auto& op : fs)
    for (DType dt : kDtypes)
      for (int64_t n : pointwise_sizes()) {
        const Unary f = op.second;
        Case c{std::string(op.first) + " " + dtype_name(dt) + " n=" + std::to_string(n),
               {uniform(dt, {n}, 0.1, 3, 6)},
               [f](const std::vector<VarPtr>& x, const FuncPtr&) {
                 return std::vector<VarPtr>{f(x[0])};
               }};
        expect_agreement(c);
      }
}

TEST_F(GpuFunctions, SumOfEverythingAndAlongEachAxis) {
  for (DType dt : kDtypes) {
    for (int64_t n : pointwise_sizes())
      expect_agreement({std::string("sum ") + dtype_name(dt) + " n=" + std::to_string(n),
                        {uniform(dt, {n}, -1, 1, 7)},
                        [](const std::vector<VarPtr>& x, const FuncPtr&) {
                          return std::vector<VarPtr>{ops::sum(x[0])};
                        },
                        nullptr,
                        true,
                        dt == DType::Float32 ? 1e-4 : -1,
                        1e-4});
    const Shape shape{3, 1025, 2};
    for (int32_t axis = 0; axis < 3; ++axis)
      for (bool keep : {false, true})
        expect_agreement({std::string("sum_axis ") + dtype_name(dt) + " axis " +
                              std::to_string(axis) + (keep ? " keepdims" : ""),
                          {uniform(dt, shape, -1, 1, 8)},
                          [axis, keep](const std::vector<VarPtr>& x, const FuncPtr&) {
                            return std::vector<VarPtr>{ops::sum_axis(x[0], axis, keep)};
                          },
                          nullptr,
                          true,
                          dt == DType::Float32 ? 1e-4 : -1,
                          1e-4});
  }
}

TEST_F(GpuFunctions, MatmulInEveryTransposition) {
  for (DType dt : kDtypes)
    for (bool ta : {false, true})
      for (bool tb : {false, true}) {
        const int64_t m = 33, k = 17, n = 65;
        Shape sa = ta ? Shape{k, m} : Shape{m, k};
        Shape sb = tb ? Shape{n, k} : Shape{k, n};
        expect_agreement(
            {std::string("matmul ") + dtype_name(dt) + (ta ? " A^T" : " A") + (tb ? " B^T" : " B"),
             {uniform(dt, sa, -1, 1, 9), uniform(dt, sb, -1, 1, 10)},
             [ta, tb](const std::vector<VarPtr>& x, const FuncPtr&) {
               return std::vector<VarPtr>{ops::matmul(x[0], x[1], ta, tb)};
             }});
        const int64_t b = 3;
        Shape ba = ta ? Shape{b, k, m} : Shape{b, m, k};
        Shape bb = tb ? Shape{b, n, k} : Shape{b, k, n};
        expect_agreement({std::string("batch_matmul ") + dtype_name(dt) + (ta ? " A^T" : " A") +
                              (tb ? " B^T" : " B"),
                          {uniform(dt, ba, -1, 1, 11), uniform(dt, bb, -1, 1, 12)},
                          [ta, tb](const std::vector<VarPtr>& x, const FuncPtr&) {
                            return std::vector<VarPtr>{ops::batch_matmul(x[0], x[1], ta, tb)};
                          }});
      }
}

TEST_F(GpuFunctions, MathCheckBackwardOnTheDevice) {
  const DType dt = DType::Float64;
  for (const NamedBinary& op : kBinary)
    expect_check_backward({op.name,
                           {uniform(dt, {3, 1, 4}, -2, 2, 13), uniform(dt, {5, 1}, 0.5, 2, 14)},
                           binary(op.f)});
  for (const NamedScalar& op : kScalar) {
    const Scalar f = op.f;
    const double s = op.s;
    expect_check_backward({op.name,
                           {uniform(dt, {7}, 0.5, 2, 15)},
                           [f, s](const std::vector<VarPtr>& x, const FuncPtr&) {
                             return std::vector<VarPtr>{f(x[0], s)};
                           }});
  }
  expect_check_backward(
      {"exp", {uniform(dt, {6}, -1, 1, 16)}, [](const std::vector<VarPtr>& x, const FuncPtr&) {
         return std::vector<VarPtr>{ops::log(ops::exp(ops::neg(x[0])))};
       }});
  expect_check_backward(
      {"sum_axis",
       {uniform(dt, {2, 3, 4}, -1, 1, 17)},
       [](const std::vector<VarPtr>& x, const FuncPtr&) {
         return std::vector<VarPtr>{ops::sum_axis(x[0], 1, false), ops::sum(x[0])};
       }});
  expect_check_backward({"matmul",
                         {uniform(dt, {3, 4}, -1, 1, 18), uniform(dt, {5, 4}, -1, 1, 19)},
                         [](const std::vector<VarPtr>& x, const FuncPtr&) {
                           return std::vector<VarPtr>{ops::matmul(x[0], x[1], false, true)};
                         }});
}

// Gradients that meet at a variable are added on the device.
TEST_F(GpuFunctions, GradientAccumulationOverBranches) {
  for (DType dt : kDtypes)
    expect_agreement({std::string("branches ") + dtype_name(dt),
                      {uniform(dt, {1025}, -2, 2, 20)},
                      [](const std::vector<VarPtr>& x, const FuncPtr&) {
                        VarPtr a = ops::mul_scalar(x[0], 3);
                        VarPtr b = ops::exp(x[0]);
                        VarPtr c = ops::mul(x[0], x[0]);
                        return std::vector<VarPtr>{ops::add(ops::add(a, b), c)};
                      }});
}

}  // namespace
}  // namespace gputest
