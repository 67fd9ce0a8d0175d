// CPU / emulated-GPU agreement of the reductions of issue 42 over sets of
// axes (sum_axes, mean, average, max, min, argmax, argmin, logsumexp) and of
// softmax_axis / log_softmax, forward and backward, both reduce_extreme
// paths (a thread per output, a block per output); check_backward and
// check_double_backward on the device.
#include <string>
#include <vector>

#include "agreement.h"

namespace gputest {
namespace {

using namespace chainerc;

const DType kDtypes[] = {DType::Float32, DType::Float64};

using AxesFn = VarPtr (*)(const VarPtr&, const int32_t*, int32_t, bool);
struct NamedAxesFn {
  const char* name;
  AxesFn f;
};
const NamedAxesFn kAxesFns[] = {
    {"sum_axes", ops::sum_axes}, {"mean", ops::mean}, {"max", ops::max}, {"min", ops::min}};

const std::vector<std::vector<int32_t>> kAxes = {{}, {0}, {1}, {0, 2}, {-1, 1}};

std::string axes_name(const std::vector<int32_t>& axes) {
  std::string s = "(";
  for (int32_t a : axes) s += std::to_string(a) + ",";
  return s + ")";
}

TEST_F(GpuFunctions, ReductionsOverAxisSets) {
  // (3, 1025, 2): axis 1 reduces 1025 elements per output (a block each),
  // axes (0) three (a thread each).
  for (DType dt : kDtypes)
    for (const NamedAxesFn& op : kAxesFns)
      for (const auto& axes : kAxes)
        for (bool keep : {false, true}) {
          const AxesFn f = op.f;
          expect_agreement({std::string(op.name) + " " + dtype_name(dt) + " axes " +
                                axes_name(axes) + (keep ? " keepdims" : ""),
                            {uniform(dt, {3, 1025, 2}, -1, 1, 31)},
                            [f, axes, keep](const std::vector<VarPtr>& x, const FuncPtr&) {
                              const int32_t n = static_cast<int32_t>(axes.size());
                              return std::vector<VarPtr>{
                                  f(x[0], n ? axes.data() : nullptr, n, keep)};
                            },
                            nullptr,
                            true,
                            dt == DType::Float32 ? 1e-4 : -1,
                            1e-4});
        }
}

TEST_F(GpuFunctions, ArgmaxArgminAndTies) {
  for (DType dt : kDtypes) {
    for (int32_t axis : {-1, 0, 1, 2})
      for (bool is_min : {false, true}) {
        const std::vector<int32_t> ax = {axis};
        expect_agreement({std::string(is_min ? "argmin " : "argmax ") + dtype_name(dt) +
                              (axis < 0 ? " all" : " axis " + std::to_string(axis)),
                          {uniform(dt, {3, 1025, 2}, -1, 1, 32)},
                          [ax, is_min](const std::vector<VarPtr>& x, const FuncPtr&) {
                            const int32_t n = ax[0] < 0 ? 0 : 1;
                            return std::vector<VarPtr>{is_min ? ops::argmin(x[0], ax.data(), n)
                                                              : ops::argmax(x[0], ax.data(), n)};
                          },
                          nullptr,
                          false});
      }
    // Integer values: many ties; the first position wins and every tied
    // element gets max's gradient, on both devices.
    Array ties = uniform(dt, {4, 300}, 0, 3, 33);
    ties = ties.to_device(cpu());
    dispatch_floating(dt, "ties", [&](auto t) {
      using T = decltype(t);
      for (int64_t i = 0; i < ties.size(); ++i)
        ties.data<T>()[i] = static_cast<T>(static_cast<int>(ties.data<T>()[i]));
    });
    const int32_t ax1[] = {1};
    expect_agreement({std::string("argmax ties ") + dtype_name(dt),
                      {ties},
                      [ax1](const std::vector<VarPtr>& x, const FuncPtr&) {
                        return std::vector<VarPtr>{ops::argmax(x[0], ax1, 1)};
                      },
                      nullptr,
                      false});
    expect_agreement({std::string("max ties ") + dtype_name(dt),
                      {ties},
                      [ax1](const std::vector<VarPtr>& x, const FuncPtr&) {
                        return std::vector<VarPtr>{ops::max(x[0], ax1, 1, false)};
                      }});
  }
}

TEST_F(GpuFunctions, LogsumexpSoftmaxLogSoftmaxCumsumAverage) {
  for (DType dt : kDtypes) {
    const double rtol = dt == DType::Float32 ? 1e-4 : -1;
    for (const auto& axes : kAxes)
      expect_agreement({std::string("logsumexp ") + dtype_name(dt) + " axes " + axes_name(axes),
                        {uniform(dt, {3, 1025, 2}, -3, 3, 34)},
                        [axes](const std::vector<VarPtr>& x, const FuncPtr&) {
                          const int32_t n = static_cast<int32_t>(axes.size());
                          return std::vector<VarPtr>{
                              ops::logsumexp(x[0], n ? axes.data() : nullptr, n)};
                        },
                        nullptr,
                        true,
                        rtol,
                        1e-5});
    for (int32_t axis : {0, 1, 2, -1}) {
      expect_agreement({std::string("softmax_axis ") + dtype_name(dt) + " " + std::to_string(axis),
                        {uniform(dt, {3, 257, 2}, -3, 3, 35)},
                        [axis](const std::vector<VarPtr>& x, const FuncPtr&) {
                          return std::vector<VarPtr>{ops::softmax_axis(x[0], axis)};
                        },
                        nullptr,
                        true,
                        rtol,
                        1e-6});
      expect_agreement({std::string("log_softmax ") + dtype_name(dt) + " " + std::to_string(axis),
                        {uniform(dt, {3, 257, 2}, -3, 3, 36)},
                        [axis](const std::vector<VarPtr>& x, const FuncPtr&) {
                          return std::vector<VarPtr>{ops::log_softmax(x[0], axis)};
                        },
                        nullptr,
                        true,
                        rtol,
                        1e-5});
    }
    for (int32_t axis : {-1, 0, 1, 2})
      expect_agreement({std::string("cumsum ") + dtype_name(dt) + " " + std::to_string(axis),
                        {uniform(dt, {3, 65, 2}, -1, 1, 39)},
                        [axis](const std::vector<VarPtr>& x, const FuncPtr&) {
                          return std::vector<VarPtr>{axis < 0 ? ops::cumsum(x[0], nullptr, 0)
                                                              : ops::cumsum(x[0], &axis, 1)};
                        },
                        nullptr,
                        true,
                        rtol,
                        1e-5});
    const int32_t ax1[] = {1};
    expect_agreement({std::string("average ") + dtype_name(dt),
                      {uniform(dt, {5, 7}, -1, 1, 37), uniform(dt, {7}, 0.5, 2, 38)},
                      [ax1](const std::vector<VarPtr>& x, const FuncPtr&) {
                        return std::vector<VarPtr>{ops::average(x[0], ax1, 1, x[1], false)};
                      },
                      nullptr,
                      true,
                      rtol,
                      1e-5});
  }
}

// matmul by NumPy's rules (Chainer 7): 1-D operands and broadcast stacks.
TEST_F(GpuFunctions, MatmulNumpyRules) {
  struct Shapes {
    Shape a, b;
    bool ta, tb;
  };
  const Shapes cases[] = {{{4}, {4, 3}, false, false},
                          {{5, 4}, {4}, false, false},
                          {{7}, {7}, true, true},
                          {{2, 1, 3, 4}, {5, 4, 2}, false, false},
                          {{2, 4, 3}, {1, 2, 4}, true, true},
                          {{3}, {2, 3, 4}, false, false}};
  for (DType dt : kDtypes)
    for (const Shapes& c : cases) {
      const bool ta = c.ta, tb = c.tb;
      expect_agreement(
          {std::string("matmul ") + dtype_name(dt) + " " + c.a.to_string() + " " + c.b.to_string(),
           {uniform(dt, c.a, -1, 1, 50), uniform(dt, c.b, -1, 1, 51)},
           [ta, tb](const std::vector<VarPtr>& x, const FuncPtr&) {
             return std::vector<VarPtr>{ops::matmul(x[0], x[1], ta, tb)};
           }});
    }
}

TEST_F(GpuFunctions, ReductionsCheckDoubleBackwardOnTheDevice) {
  const DType dt = DType::Float64;
  const int32_t ax02[] = {0, 2}, ax1[] = {1};
  const Case cases[] = {
      {"sum_axes",
       {uniform(dt, {2, 3, 4}, -1, 1, 40)},
       [ax02](const std::vector<VarPtr>& x, const FuncPtr&) {
         return std::vector<VarPtr>{ops::sum_axes(x[0], ax02, 2, true)};
       }},
      {"max",
       {uniform(dt, {2, 3, 4}, -1, 1, 41)},
       [ax02](const std::vector<VarPtr>& x, const FuncPtr&) {
         return std::vector<VarPtr>{ops::max(x[0], ax02, 2, false)};
       }},
      {"min",
       {uniform(dt, {2, 3, 4}, -1, 1, 42)},
       [](const std::vector<VarPtr>& x, const FuncPtr&) {
         return std::vector<VarPtr>{ops::min(x[0], nullptr, 0, false)};
       }},
      {"logsumexp",
       {uniform(dt, {2, 3, 4}, -1, 1, 43)},
       [ax1](const std::vector<VarPtr>& x, const FuncPtr&) {
         return std::vector<VarPtr>{ops::logsumexp(x[0], ax1, 1)};
       }},
      {"softmax_axis",
       {uniform(dt, {2, 3, 4}, -1, 1, 44)},
       [](const std::vector<VarPtr>& x, const FuncPtr&) {
         return std::vector<VarPtr>{ops::softmax_axis(x[0], 2)};
       }},
      {"log_softmax",
       {uniform(dt, {2, 3, 4}, -1, 1, 45)},
       [](const std::vector<VarPtr>& x, const FuncPtr&) {
         return std::vector<VarPtr>{ops::log_softmax(x[0], 0)};
       }},
      {"cumsum",
       {uniform(dt, {2, 3, 4}, -1, 1, 48)},
       [ax1](const std::vector<VarPtr>& x, const FuncPtr&) {
         return std::vector<VarPtr>{ops::cumsum(x[0], ax1, 1)};
       }},
      {"average",
       {uniform(dt, {3, 4}, -1, 1, 46), uniform(dt, {4}, 0.5, 2, 47)},
       [ax1](const std::vector<VarPtr>& x, const FuncPtr&) {
         return std::vector<VarPtr>{ops::average(x[0], ax1, 1, x[1], true)};
       }},
  };
  for (const Case& c : cases) {
    expect_check_backward(c, 1e-6, 1e-7, 1e-6);
    expect_check_double_backward(c);
  }
}

}  // namespace
}  // namespace gputest
