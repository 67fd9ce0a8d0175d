// Issue 42's elementwise functions of two inputs (maximum, minimum, where) on
// cuda:0 (the emulated devices in CI): CPU / GPU agreement of values and
// gradients at every pointwise size and with broadcasting, where's condition
// as an int32 array on the host and as a float array on the device, and
// check_backward / check_double_backward on the device; and the double
// backward on the device of the one-input ones (their values, CPU agreement
// and check_backward are test_pointwise_table.cpp's).
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
const NamedBinary kExtrema[] = {{"maximum", ops::maximum}, {"minimum", ops::minimum}};

Build binary(Binary f) {
  return [f](const std::vector<VarPtr>& x, const FuncPtr&) {
    return std::vector<VarPtr>{f(x[0], x[1])};
  };
}

// 0 / 1 (as `dtype`), reproducible from the seed.
Array condition(DType dtype, const Shape& shape, uint32_t seed) {
  Array u = uniform(DType::Float64, shape, 0, 1, seed);
  Array c = Array::empty(dtype, shape);
  for (int64_t i = 0; i < c.size(); ++i) {
    const bool v = u.get(i) < 0.5;
    if (dtype == DType::Int32)
      c.data<int32_t>()[i] = v;
    else if (dtype == DType::Float32)
      c.data<float>()[i] = v;
    else
      c.data<double>()[i] = v;
  }
  return c;
}

// where(c, x, y) with c on the run's device when it is a float condition, on
// the host when int32.
Build where_of(const Array& c) {
  return [c](const std::vector<VarPtr>& x, const FuncPtr&) {
    const Device d = x[0]->data.device();
    Array cond = c.dtype() == DType::Int32 ? c : c.to_device(d);
    return std::vector<VarPtr>{ops::where(cond, x[0], x[1])};
  };
}

TEST_F(GpuFunctions, MaximumMinimumAgreeAtEverySize) {
  for (const NamedBinary& op : kExtrema)
    for (DType dt : kDtypes)
      for (int64_t n : pointwise_sizes())
        expect_agreement({std::string(op.name) + " " + dtype_name(dt) + " n=" + std::to_string(n),
                          {uniform(dt, {n}, -2, 2, 1), uniform(dt, {n}, -2, 2, 2)},
                          binary(op.f)});
}

TEST_F(GpuFunctions, MaximumMinimumWhereWithBroadcasting) {
  const std::vector<std::pair<Shape, Shape>> shapes = {
      {{3, 1, 5}, {4, 1}}, {{1}, {7, 33}}, {{2, 3, 4}, {4}}, {{}, {31}}};
  for (const auto& [sa, sb] : shapes)
    for (DType dt : kDtypes) {
      for (const NamedBinary& op : kExtrema)
        expect_agreement({std::string(op.name) + " " + dtype_name(dt),
                          {uniform(dt, sa, -2, 2, 3), uniform(dt, sb, -2, 2, 4)},
                          binary(op.f)});
      for (DType ct : {DType::Int32, dt})
        expect_agreement({std::string("where ") + dtype_name(dt) + " condition " + dtype_name(ct),
                          {uniform(dt, sa, -2, 2, 5), uniform(dt, sb, -2, 2, 6)},
                          where_of(condition(ct, sb, 7))});
    }
}

TEST_F(GpuFunctions, WhereAgreesAtEverySize) {
  for (DType dt : kDtypes)
    for (int64_t n : pointwise_sizes())
      expect_agreement({std::string("where ") + dtype_name(dt) + " n=" + std::to_string(n),
                        {uniform(dt, {n}, -2, 2, 8), uniform(dt, {n}, -2, 2, 9)},
                        where_of(condition(dt, {n}, 10))});
}

TEST_F(GpuFunctions, TwoInputFunctionsCheckBackwardAndDoubleBackwardOnTheDevice) {
  // Away from ties: a in [0.5, 2), b in [-2, -0.5) or mixed by sign.
  for (const NamedBinary& op : kExtrema) {
    Case c{std::string(op.name) + " float64",
           {away_from_zero(DType::Float64, {2, 3}, 0.3, 2, 11),
            uniform(DType::Float64, {3}, -0.2, 0.2, 12)},
           binary(op.f)};
    expect_check_backward(c, 1e-6, 1e-8, 1e-7);
    expect_check_double_backward(c);
  }
  Case w{"where float64",
         {uniform(DType::Float64, {2, 3}, -2, 2, 13), uniform(DType::Float64, {2, 1}, -2, 2, 14)},
         where_of(condition(DType::Float64, {2, 3}, 15))};
  expect_check_backward(w, 1e-6, 1e-8, 1e-7);
  expect_check_double_backward(w);
}

TEST_F(GpuFunctions, SwishAgreesAndDoubleBackwardOnTheDevice) {
  for (DType dt : kDtypes)
    expect_agreement({std::string("swish ") + dtype_name(dt),
                      {uniform(dt, {4, 3, 5}, -2, 2, 17), uniform(dt, {3}, 0.5, 2, 18)},
                      binary(ops::swish)});
  Case c{"swish float64",
         {uniform(DType::Float64, {2, 3, 2}, -2, 2, 19), uniform(DType::Float64, {3}, 0.5, 2, 20)},
         binary(ops::swish)};
  expect_check_backward(c, 1e-6, 1e-8, 1e-7);
  expect_check_double_backward(c);
}

using Unary = std::function<VarPtr(const VarPtr&)>;
struct NamedUnary {
  const char* name;
  Unary f;
  double low, high;
};

TEST_F(GpuFunctions, OneInputFunctionsDoubleBackwardOnTheDevice) {
  const NamedUnary fns[] = {
      {"sqrt", ops::sqrt, 0.5, 3},
      {"rsqrt", ops::rsqrt, 0.5, 3},
      {"erf", ops::erf, -2, 2},
      {"gelu", ops::gelu, -3, 3},
      {"gelu_tanh", ops::gelu_tanh, -3, 3},
      {"silu", ops::silu, -3, 3},
      {"softplus", [](const VarPtr& x) { return ops::softplus(x, 2.0); }, -2, 2},
      {"elu", [](const VarPtr& x) { return ops::elu(x, 0.7); }, 0.2, 2},
      {"elu (x < 0)", [](const VarPtr& x) { return ops::elu(x, 0.7); }, -2, -0.2},
  };
  for (const NamedUnary& u : fns) {
    Unary f = u.f;
    expect_check_double_backward({std::string(u.name) + " float64",
                                  {uniform(DType::Float64, {2, 3}, u.low, u.high, 16)},
                                  [f](const std::vector<VarPtr>& x, const FuncPtr&) {
                                    return std::vector<VarPtr>{f(x[0])};
                                  }});
  }
}

}  // namespace
}  // namespace gputest
