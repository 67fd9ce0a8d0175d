// Double backprop on the (emulated) CUDA devices (suite 'gpu'): Chainer's
// check_double_backward on cuda:0, against central differences computed on
// the device, for every built-in function with a graph backward (docs/
// double-backprop.md's list), in float64 at small sizes; and the
// second-order gradients that reach function objects' parameters (a
// gradient penalty's backward) on cuda:0 against the CPU's.
#include <ch/ch.h>

#include <cmath>

#include "agreement.h"
#include "core/error.h"
#include "core/gradient_check.h"
#include "core/variable.h"

namespace gputest {
namespace {

using namespace chainerc;

constexpr DType F64 = DType::Float64;

Array u(const Shape& s, uint32_t seed, double lo = -1, double hi = 1) {
  return uniform(F64, s, lo, hi, seed);
}

using Fn1 = std::function<VarPtr(const VarPtr&)>;
// One input, one output.
Build unary(Fn1 f) {
  return [f](const std::vector<VarPtr>& x, const FuncPtr&) { return std::vector<VarPtr>{f(x[0])}; };
}
using Fn2 = std::function<VarPtr(const VarPtr&, const VarPtr&)>;
Build binary(Fn2 f) {
  return [f](const std::vector<VarPtr>& x, const FuncPtr&) {
    return std::vector<VarPtr>{f(x[0], x[1])};
  };
}
// tanh(fn(x)) for a function object.
Build tanh_of_fn() {
  return [](const std::vector<VarPtr>& x, const FuncPtr& fn) {
    return std::vector<VarPtr>{ops::tanh(apply1(fn, {x[0]}))};
  };
}

TEST_F(GpuFunctions, DoubleBackwardOfPointwiseAndArrayFunctions) {
  const Shape s{2, 3};
  const std::vector<Case> cases = {
      {"neg", {u(s, 1)}, unary([](const VarPtr& x) { return ops::neg(x); })},
      {"exp", {u(s, 2)}, unary([](const VarPtr& x) { return ops::exp(x); })},
      {"log", {u(s, 3, 0.5, 2)}, unary([](const VarPtr& x) { return ops::log(x); })},
      {"tanh", {u(s, 4)}, unary([](const VarPtr& x) { return ops::tanh(x); })},
      {"sigmoid", {u(s, 5)}, unary([](const VarPtr& x) { return ops::sigmoid(x); })},
      {"relu", {away_from_zero(F64, s, 0.1, 1, 6)}, unary([](const VarPtr& x) {
         return ops::tanh(ops::relu(x));
       })},
      {"leaky_relu", {away_from_zero(F64, s, 0.1, 1, 7)}, unary([](const VarPtr& x) {
         return ops::tanh(ops::leaky_relu(x, 0.2));
       })},
      {"softmax", {u(s, 8)}, unary([](const VarPtr& x) { return ops::softmax(x); })},
      {"identity", {u(s, 9)}, unary([](const VarPtr& x) { return ops::tanh(ops::identity(x)); })},
      {"scalar forms", {u(s, 10, 0.5, 2)}, unary([](const VarPtr& x) {
         VarPtr a = ops::add_scalar(ops::sub_scalar(x, 0.3), 1.5);
         VarPtr b = ops::rsub_scalar(ops::mul_scalar(a, -2.5), 1.5);
         return ops::div_scalar(ops::rdiv_scalar(ops::mul(b, b), 2.0), 4.0);
       })},
      {"pow_scalar", {u(s, 11, 0.5, 2)}, unary([](const VarPtr& x) {
         return ops::pow_scalar(x, 2.5);
       })},
      {"rpow_scalar", {u(s, 12)}, unary([](const VarPtr& x) { return ops::rpow_scalar(x, 1.7); })},
      {"sum", {u(s, 13)}, unary([](const VarPtr& x) { return ops::sum(ops::mul(x, x)); })},
      {"sum_axis", {u(s, 14)}, unary([](const VarPtr& x) {
         return ops::sum_axis(ops::mul(x, x), 1, false);
       })},
      {"sum_to", {u(s, 15)}, unary([](const VarPtr& x) {
         return ops::tanh(ops::sum_to(x, Shape{1, 3}));
       })},
      {"reshape", {u(s, 16)}, unary([](const VarPtr& x) {
         return ops::tanh(ops::reshape(x, Shape{3, 2}));
       })},
      {"broadcast_to", {u(Shape{3}, 17)}, unary([](const VarPtr& x) {
         return ops::tanh(ops::broadcast_to(x, Shape{4, 3}));
       })},
      {"transpose", {u(s, 18)}, unary([](const VarPtr& x) {
         return ops::tanh(ops::transpose(x, nullptr, 0));
       })},
      {"copy to cuda:1", {u(s, 19)}, unary([](const VarPtr& x) {
         return ops::tanh(ops::copy(x, gpu(1)));
       })},
      {"dropout", {u(s, 20)}, unary([](const VarPtr& x) {
         ch_config_seed(7);  // one mask for every evaluation
         return ops::dropout(ops::tanh(x), 0.4, true);
       })},
  };
  for (const Case& c : cases) expect_check_double_backward(c);
}

TEST_F(GpuFunctions, DoubleBackwardOfBinaryFunctionsAndLosses) {
  const Shape s{2, 3};
  std::vector<Case> cases;
  const std::pair<const char*, Fn2> ops2[] = {
      {"add", [](const VarPtr& a, const VarPtr& b) { return ops::add(a, b); }},
      {"sub", [](const VarPtr& a, const VarPtr& b) { return ops::sub(a, b); }},
      {"mul", [](const VarPtr& a, const VarPtr& b) { return ops::mul(a, b); }},
      {"div", [](const VarPtr& a, const VarPtr& b) { return ops::div(a, b); }}};
  for (const auto& [name, f] : ops2) {
    cases.push_back({name, {u(s, 30), u(s, 31, 0.5, 2)}, binary(f)});
    cases.push_back(
        {std::string(name) + " broadcast", {u(s, 32), u(Shape{3}, 33, 0.5, 2)}, binary(f)});
  }
  cases.push_back(
      {"matmul",
       {u(Shape{3, 4}, 34), u(Shape{4, 2}, 35)},
       binary([](const VarPtr& a, const VarPtr& b) { return ops::matmul(a, b, false, false); })});
  cases.push_back(
      {"matmul transposed",
       {u(Shape{4, 3}, 36), u(Shape{2, 4}, 37)},
       binary([](const VarPtr& a, const VarPtr& b) { return ops::matmul(a, b, true, true); })});
  cases.push_back({"batch_matmul",
                   {u(Shape{2, 3, 2}, 38), u(Shape{2, 2, 2}, 39)},
                   binary([](const VarPtr& a, const VarPtr& b) {
                     return ops::batch_matmul(a, b, false, false);
                   })});
  cases.push_back(
      {"concat", {u(s, 40), u(Shape{2, 2}, 41)}, binary([](const VarPtr& a, const VarPtr& b) {
         return ops::tanh(ops::concat({a, b}, 1));
       })});
  cases.push_back(
      {"mean_squared_error", {u(s, 42), u(s, 43)}, binary([](const VarPtr& a, const VarPtr& b) {
         return ops::mean_squared_error(a, b);
       })});
  cases.push_back({"softmax_cross_entropy",
                   {u(Shape{3, 4}, 44), labels(Shape{3}, 4, 45)},
                   binary([](const VarPtr& x, const VarPtr& t) {
                     return ops::softmax_cross_entropy(ops::tanh(x), t);
                   })});
  for (const Case& c : cases) expect_check_double_backward(c);
}

TEST_F(GpuFunctions, DoubleBackwardOfLstm) {
  for (const Shape& cs : {Shape{2, 3}, Shape{1, 2, 2}}) {
    Shape xs = cs;
    xs[1] *= 4;
    expect_check_double_backward(
        {"lstm " + cs.to_string(),
         {u(cs, 50), u(xs, 51, -1.5, 1.5)},
         [](const std::vector<VarPtr>& x, const FuncPtr&) { return ops::lstm(x[0], x[1]); }});
  }
}

TEST_F(GpuFunctions, DoubleBackwardOfFunctionObjects) {
  const std::vector<Case> cases = {
      {"Linear",
       {u(Shape{2, 4}, 60)},
       tanh_of_fn(),
       ops::linear_new(4, 3, F64, 1.0, 0.2, false, nullptr, nullptr)},
      {"PReLU",
       {away_from_zero(F64, Shape{2, 3, 2}, 0.1, 1, 61)},
       tanh_of_fn(),
       ops::prelu_new(Shape{3}, F64, 0.3)},
      {"Convolution2D",
       {u(Shape{1, 2, 5, 4}, 62)},
       tanh_of_fn(),
       ops::convolution_2d_new(2, 2, 3, 2, 2, 1, 1, 0, F64, 1.0, 0.1, false, nullptr, nullptr)},
      {"Inception",
       {u(Shape{1, 2, 3, 3}, 63)},
       tanh_of_fn(),
       ops::inception_new(2, 1, 1, 1, 1, 1, 1, F64)},
      {"BatchNormalization",
       {u(Shape{4, 3}, 64, -2, 2)},
       tanh_of_fn(),
       ops::batch_normalization_new(Shape{3}, 0.9, 1e-5, F64)},
      {"BatchNormalization NCHW",
       {u(Shape{2, 2, 2, 2}, 65, -2, 2)},
       tanh_of_fn(),
       ops::batch_normalization_new(Shape{2}, 0.9, 1e-5, F64)},
  };
  for (const Case& c : cases) expect_check_double_backward(c);
  // EmbedID: tanh(x * embed(ids)).
  expect_check_double_backward({"EmbedID",
                                {u(Shape{3, 4}, 66, -1.5, 1.5), labels(Shape{3}, 5, 67)},
                                [](const std::vector<VarPtr>& x, const FuncPtr& fn) {
                                  return std::vector<VarPtr>{
                                      ops::tanh(ops::mul(x[0], apply1(fn, {x[1]})))};
                                },
                                ops::embed_id_new(5, 4, F64, nullptr)});
}

// Distinct values on a grid, none 0 (no ties in a pooling window, no kink).
Array distinct(const Shape& s) {
  Array a = Array::empty(F64, s);
  const int64_t n = a.size();
  for (int64_t i = 0; i < n; ++i)
    a.data<double>()[i] =
        (2.0 * static_cast<double>((i * 7919) % n) + 0.5) / static_cast<double>(n) - 1;
  return a;
}

TEST_F(GpuFunctions, DoubleBackwardOfPooling) {
  const Shape s{1, 2, 5, 5};
  expect_check_double_backward(
      {"max_pooling_2d k3 s2 p1 cover_all", {distinct(s)}, unary([](const VarPtr& x) {
         VarPtr y = ops::max_pooling_2d(x, 3, 3, 2, 2, 1, 1, true);
         return ops::mul(y, y);
       })});
  expect_check_double_backward({"max_pooling_2d k2 s2", {distinct(s)}, unary([](const VarPtr& x) {
                                  VarPtr y = ops::max_pooling_2d(x, 2, 2, 2, 2, 0, 0, false);
                                  return ops::mul(y, y);
                                })});
  expect_check_double_backward(
      {"average_pooling_2d k3 s2 p1", {u(s, 70)}, unary([](const VarPtr& x) {
         VarPtr y = ops::average_pooling_2d(x, 3, 3, 2, 2, 1, 1);
         return ops::mul(y, y);
       })});
}

// ---- second-order gradients into parameters: cuda:0 against the CPU

// backward of P = sum(v * dL/dx), L = sum(tanh(fn(x))), on `device`: the
// parameters' gradients (on the CPU) and x's.
Arrays penalty_gradients(const FuncPtr& f, const Array& x0, const Array& v0, Device device) {
  FuncPtr fn = with_parameters_on(f, device);
  auto x = std::make_shared<VariableImpl>(x0.to_device(device));
  VarPtr l = ops::sum(ops::tanh(apply1(fn, {x})));
  BackwardOptions opt;
  opt.enable_double_backprop = true;
  VarPtr g = grad({l}, {x}, {}, opt)[0];
  VarPtr p = ops::sum(ops::mul(g, constant_variable(v0.to_device(device))));
  backward(p, false);
  Arrays out;
  for (const chainerc::Parameter& q : *fn->parameters) out.push_back(q.grad.to_device(cpu()));
  out.push_back(x->grad.to_device(cpu()));
  return out;
}

TEST_F(GpuFunctions, PenaltyGradientsOnTheDeviceAgreeWithTheCpu) {
  struct P {
    const char* name;
    FuncPtr f;
    Shape x;
  };
  const P cases[] = {
      {"Linear", ops::linear_new(4, 3, F64, 1.0, 0.2, false, nullptr, nullptr), Shape{2, 4}},
      {"PReLU", ops::prelu_new(Shape{3}, F64, 0.3), Shape{2, 3, 2}},
      {"Convolution2D",
       ops::convolution_2d_new(2, 3, 3, 3, 1, 1, 1, 1, F64, 1.0, 0.1, false, nullptr, nullptr),
       Shape{2, 2, 4, 5}},
      {"Inception", ops::inception_new(2, 2, 1, 2, 1, 1, 2, F64), Shape{1, 2, 4, 4}},
      {"BatchNormalization", ops::batch_normalization_new(Shape{3}, 0.9, 1e-5, F64), Shape{4, 3}},
  };
  for (const P& c : cases) {
    SCOPED_TRACE(c.name);
    const Array x = c.x.ndim() == 4 ? distinct(c.x) : u(c.x, 80, -1.5, 1.5);
    const Array v = u(c.x, 81);
    Arrays on_cpu, on_gpu;
    try {
      on_cpu = penalty_gradients(c.f, x, v, cpu());
      on_gpu = penalty_gradients(c.f, x, v, gpu());
    } catch (const chainerc::Error& e) {
      ADD_FAILURE() << e.what();
      continue;
    }
    ASSERT_EQ(on_cpu.size(), on_gpu.size());
    double norm = 0;
    for (size_t i = 0; i < on_cpu.size(); ++i) {
      std::string message;
      EXPECT_TRUE(chainerc::allclose(on_gpu[i], on_cpu[i], 1e-11, 1e-9, nullptr, &message))
          << "gradient " << i << ": " << message;
      for (int64_t k = 0; k < on_cpu[i].size(); ++k)
        norm += on_cpu[i].data<double>()[k] * on_cpu[i].data<double>()[k];
    }
    EXPECT_GT(norm, 1e-8) << "all gradients zero: nothing compared";
  }
}

}  // namespace
}  // namespace gputest
