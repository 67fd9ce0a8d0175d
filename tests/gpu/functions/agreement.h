// CPU / emulated-GPU agreement of the built-in functions (suite 'gpu'). A case
// builds a graph from input variables; expect_agreement runs it on the CPU and
// on cuda:0 from the same inputs (and, for a function object, the same
// parameters) and compares the outputs, the inputs' gradients and the
// parameters' gradients for the same random upstream gradients.
// expect_check_backward runs Chainer's check_backward on cuda:0 alone: the
// device's backward against central differences computed on the device.
//
// Every test skips without a CUDA device (CH_REQUIRE_GPU=1 makes that a
// failure): the emulated build (-Dcuda-emulation=true) always has two.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "core/array.h"
#include "core/variable.h"
#include "ops/ops.h"

namespace gputest {

using chainerc::Array;
using chainerc::Arrays;
using chainerc::Device;
using chainerc::DType;
using chainerc::FuncPtr;
using chainerc::Shape;
using chainerc::VarPtr;

inline Device cpu() { return Device{}; }
inline Device gpu(int32_t index = 0) { return Device{CH_DEVICE_CUDA, index}; }

// Uniform samples in [lo, hi) on the CPU, reproducible from `seed`.
Array uniform(DType dtype, const Shape& shape, double lo, double hi, uint32_t seed);
// Uniform samples whose magnitude is at least `gap` (away from a kink at 0:
// relu, leaky_relu, abs-like functions), in (-hi, -gap] U [gap, hi).
Array away_from_zero(DType dtype, const Shape& shape, double gap, double hi, uint32_t seed);
// int32 labels in [0, n) on the CPU.
Array labels(const Shape& shape, int32_t n, uint32_t seed);

// A function applied to variables: `fn` is the case's function object on the
// run's device (a fresh application of Case::function with its parameters
// copied there), or null when the case has none.
using Build = std::function<std::vector<VarPtr>(const std::vector<VarPtr>& xs, const FuncPtr& fn)>;

struct Case {
  std::string name;
  Arrays inputs;  // on the CPU; copied to cuda:0 for the GPU run
  Build build;
  FuncPtr function;      // a function object with parameters (Linear, ...), or null
  bool backward = true;  // also compare gradients
  // Tolerances of the comparison; negative: by the inputs' dtype (float32:
  // rtol 1e-4, atol 1e-5; float64: rtol 1e-9, atol 1e-11).
  double rtol = -1, atol = -1;
};

// Runs the case on the CPU and on cuda:0 and expects equal outputs (on
// cuda:0) and gradients of the float inputs and parameters (on cuda:0).
void expect_agreement(const Case& c);

// check_backward on cuda:0 with random upstream gradients (float64 inputs
// give a tight check).
void expect_check_backward(const Case& c, double eps = 1e-3, double atol = 1e-4,
                           double rtol = 1e-3);

// Chainer's check_double_backward on cuda:0 (float64 inputs): the first
// backward taken with double backprop against central differences of the
// case's function, then its backward, as a function (x, gy) -> gx, against
// central differences of that, all computed on the device, with random
// upstream gradients and gradients of gx.
void expect_check_double_backward(const Case& c, double eps = 1e-4, double atol = 1e-6,
                                  double rtol = 1e-5);

// A fresh application of `f` (f->clone()) whose parameters are copies on
// `device` with zero gradients.
FuncPtr with_parameters_on(const FuncPtr& f, Device device);

// The fixture: skips without a CUDA device.
class GpuFunctions : public ::testing::Test {
 protected:
  void SetUp() override;
};

// The sizes every pointwise function is checked at: not multiples of a
// block, and larger than the emulator's grid (grid-stride loops).
inline const std::vector<int64_t>& pointwise_sizes() {
  static const std::vector<int64_t> s = {1, 31, 1025, 100003};
  return s;
}

}  // namespace gputest
