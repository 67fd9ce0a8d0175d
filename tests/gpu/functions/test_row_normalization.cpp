// CPU / emulated-GPU agreement of layer_normalization, rms_normalization,
// group_normalization (their row_norm kernels) and the functional linear
// (x, W and b as variables): outputs and the gradients of every input,
// float32 and float64, small odd shapes and rows longer than a block and
// more rows than the emulator's grid; check_backward and
// check_double_backward on cuda:0 (float64).
#include "agreement.h"

namespace gputest {
namespace {

using namespace chainerc;

const DType kDtypes[] = {DType::Float32, DType::Float64};

// (kind, x's shape, groups): 0 layer, 1 rms, 2 group.
struct NormShape {
  int kind;
  Shape x;
  int32_t groups;
};
const NormShape kNormShapes[] = {
    {0, {5, 3}, 0},      {0, {2, 3, 300}, 0}, {0, {37, 7}, 0},   {1, {4, 6}, 0},
    {1, {3, 2, 513}, 0}, {1, {41, 5}, 0},     {2, {2, 6, 5}, 3}, {2, {3, 8, 4, 5}, 4},
    {2, {13, 4, 70}, 1}, {2, {5, 6}, 6},
};

Case norm_case(const NormShape& s, DType dt) {
  const int64_t C = s.kind == 2 ? s.x[1] : s.x[s.x.ndim() - 1];
  const char* names[] = {"layer_normalization", "rms_normalization", "group_normalization"};
  Arrays in{uniform(dt, s.x, -2, 3, 1), uniform(dt, Shape{C}, 0.5, 1.5, 2)};
  if (s.kind != 1) in.push_back(uniform(dt, Shape{C}, -1, 1, 3));
  const int kind = s.kind;
  const int32_t groups = s.groups;
  Case c{std::string(names[kind]) + " " + dtype_name(dt) + " " + s.x.to_string(), in,
         [kind, groups](const std::vector<VarPtr>& x, const FuncPtr&) {
           if (kind == 0)
             return std::vector<VarPtr>{ops::layer_normalization(x[0], x[1], x[2], 1e-5)};
           if (kind == 1) return std::vector<VarPtr>{ops::rms_normalization(x[0], x[1], 1e-6)};
           return std::vector<VarPtr>{ops::group_normalization(x[0], groups, x[1], x[2], 1e-5)};
         }};
  // float32: the CPU adds a row's values in float vectors, the device in double.
  if (dt == DType::Float32) c.rtol = 1e-3, c.atol = 1e-4;
  return c;
}

TEST_F(GpuFunctions, RowNormalizations) {
  for (DType dt : kDtypes)
    for (const NormShape& s : kNormShapes) expect_agreement(norm_case(s, dt));
}

// On the device alone (the emulator runs every evaluation's launches as
// fibers: small shapes).
TEST_F(GpuFunctions, RowNormalizationsCheckBackwardOnDevice) {
  for (const NormShape& s :
       {NormShape{0, {2, 3}, 0}, NormShape{1, {2, 3}, 0}, NormShape{2, {2, 4, 1}, 2}}) {
    const Case c = norm_case(s, DType::Float64);
    expect_check_backward(c, 1e-6, 1e-7, 1e-6);
    expect_check_double_backward(c);
  }
}

struct LinearShape {
  Shape x, W;
  bool bias;
  int32_t n_batch_axes;
};
const LinearShape kLinearShapes[] = {
    {{3, 4}, {2, 4}, true, 1},
    {{2, 5, 7}, {9, 7}, true, 2},
    {{2, 3, 2}, {3, 6}, false, 1},
    {{4, 33, 17}, {40, 17}, true, 2},
};

Case linear_case(const LinearShape& s, DType dt) {
  Arrays in{uniform(dt, s.x, -1, 1, 4), uniform(dt, s.W, -1, 1, 5)};
  if (s.bias) in.push_back(uniform(dt, Shape{s.W[0]}, -1, 1, 6));
  const bool bias = s.bias;
  const int32_t k = s.n_batch_axes;
  return Case{
      std::string("linear ") + dtype_name(dt) + " " + s.x.to_string() + " " + s.W.to_string(), in,
      [bias, k](const std::vector<VarPtr>& x, const FuncPtr&) {
        return std::vector<VarPtr>{bias ? ops::linear(x[0], x[1], x[2], k)
                                        : ops::linear_nobias(x[0], x[1], k)};
      }};
}

TEST_F(GpuFunctions, LinearFunction) {
  for (DType dt : kDtypes)
    for (const LinearShape& s : kLinearShapes) expect_agreement(linear_case(s, dt));
  for (const LinearShape& s :
       {LinearShape{{2, 3}, {2, 3}, true, 1}, LinearShape{{1, 2, 3}, {2, 3}, false, 2}}) {
    const Case c = linear_case(s, DType::Float64);
    expect_check_backward(c, 1e-6, 1e-7, 1e-6);
    expect_check_double_backward(c);
  }
}

}  // namespace
}  // namespace gputest
