// CPU / emulated-GPU agreement of the array functions: concat (and its
// split, the backward pass) along every axis, transpose in every permutation
// of 3-d arrays and the tiled matrix case, reshape, identity and broadcast_to,
// copy between the CPU, cuda:0 and cuda:1, and the refusal of inputs on
// different devices. int32 arrays move as well as float ones.
#include <ch/ch.h>

#include "../require_gpu.h"
#include "agreement.h"
#include "core/error.h"

namespace gputest {
namespace {

using namespace chainerc;

const DType kDtypes[] = {DType::Float32, DType::Float64};

Build concat_along(int32_t axis) {
  return [axis](const std::vector<VarPtr>& xs, const FuncPtr&) {
    return std::vector<VarPtr>{ops::concat(xs, axis)};
  };
}

TEST_F(GpuFunctions, ConcatAndItsSplitAlongEveryAxis) {
  for (DType dt : kDtypes) {
    // Along each axis of 3-d pieces whose extents differ on that axis.
    for (int32_t axis = 0; axis < 3; ++axis) {
      Arrays xs;
      for (int64_t k : {1, 31, 5}) {
        Shape s{3, 4, 33};
        s[axis] = k;
        xs.push_back(uniform(dt, s, -1, 1, static_cast<uint32_t>(10 + k)));
      }
      expect_agreement({std::string("concat ") + dtype_name(dt) + " axis " + std::to_string(axis),
                        xs, concat_along(axis)});
    }
    // 1-d at every size, and ~1e5 elements in two pieces.
    for (int64_t n : pointwise_sizes())
      expect_agreement({std::string("concat ") + dtype_name(dt) + " n=" + std::to_string(n),
                        {uniform(dt, {n}, -1, 1, 20), uniform(dt, {n + 2}, -1, 1, 21)},
                        concat_along(0)});
    // A single piece, and an empty one among others.
    expect_agreement({std::string("concat one piece ") + dtype_name(dt),
                      {uniform(dt, {2, 1025}, -1, 1, 22)},
                      concat_along(1)});
    expect_agreement({std::string("concat with an empty piece ") + dtype_name(dt),
                      {uniform(dt, {2, 3}, -1, 1, 23), uniform(dt, {2, 0}, -1, 1, 24),
                       uniform(dt, {2, 31}, -1, 1, 25)},
                      concat_along(1)});
  }
  // One variable twice: its gradients from both pieces add up on the device.
  for (DType dt : kDtypes)
    expect_agreement({std::string("concat of x, y, x ") + dtype_name(dt),
                      {uniform(dt, {3, 31}, -1, 1, 28), uniform(dt, {3, 5}, -1, 1, 29)},
                      [](const std::vector<VarPtr>& x, const FuncPtr&) {
                        return std::vector<VarPtr>{ops::concat({x[0], x[1], x[0]}, 1)};
                      }});
  expect_agreement({"concat int32",
                    {labels({3, 7}, 1000, 26), labels({3, 1025}, 1000, 27)},
                    concat_along(1),
                    nullptr,
                    false});
}

Build transpose_by(std::vector<int32_t> axes) {
  return [axes](const std::vector<VarPtr>& xs, const FuncPtr&) {
    return std::vector<VarPtr>{ops::transpose(xs[0], axes.empty() ? nullptr : axes.data(),
                                              static_cast<int32_t>(axes.size()))};
  };
}

std::string axes_name(const std::vector<int32_t>& axes) {
  std::string s = "(";
  for (size_t i = 0; i < axes.size(); ++i) s += (i ? "," : "") + std::to_string(axes[i]);
  return s + ")";
}

TEST_F(GpuFunctions, TransposeInEveryPermutation) {
  const std::vector<std::vector<int32_t>> perms3 = {{0, 1, 2}, {0, 2, 1}, {1, 0, 2},
                                                    {1, 2, 0}, {2, 0, 1}, {2, 1, 0}};
  for (DType dt : kDtypes) {
    for (const auto& p : perms3)
      expect_agreement({std::string("transpose ") + dtype_name(dt) + " {3, 33, 35} " + axes_name(p),
                        {uniform(dt, {3, 33, 35}, -1, 1, 30)},
                        transpose_by(p)});
    // The tiled matrix case: odd sizes, a row or column of tiles cut short,
    // ~1e5 elements; the reversal (axes null) of a 2-d array is the same.
    for (const Shape& s : {Shape{31, 1025}, Shape{33, 65}, Shape{317, 331}, Shape{2, 2}})
      expect_agreement({std::string("transpose ") + dtype_name(dt) + " " + s.to_string(),
                        {uniform(dt, s, -1, 1, 31)},
                        transpose_by({})});
    // Not tiled: a matrix with an extent of 1, a 1-d array, a 0-d array, 4-d.
    for (const Shape& s : {Shape{1, 1025}, Shape{1025, 1}, Shape{100003}, Shape{}})
      expect_agreement({std::string("transpose ") + dtype_name(dt) + " " + s.to_string(),
                        {uniform(dt, s, -1, 1, 32)},
                        transpose_by({})});
    expect_agreement({std::string("transpose ") + dtype_name(dt) + " {2, 3, 5, 7} (3,1,0,2)",
                      {uniform(dt, {2, 3, 5, 7}, -1, 1, 33)},
                      transpose_by({3, 1, 0, 2})});
  }
  expect_agreement({"transpose int32 batched",
                    {labels({3, 33, 65}, 1 << 30, 34)},
                    transpose_by({0, 2, 1}),
                    nullptr,
                    false});
  expect_agreement({"transpose int32 (2,0,1)",
                    {labels({3, 33, 65}, 1 << 30, 35)},
                    transpose_by({2, 0, 1}),
                    nullptr,
                    false});
}

TEST_F(GpuFunctions, ReshapeIdentityAndBroadcastTo) {
  for (DType dt : kDtypes) {
    for (int64_t n : pointwise_sizes()) {
      const std::string suffix = std::string(" ") + dtype_name(dt) + " n=" + std::to_string(n);
      expect_agreement({"reshape" + suffix,
                        {uniform(dt, {n}, -1, 1, 40)},
                        [n](const std::vector<VarPtr>& x, const FuncPtr&) {
                          // Through a function that is not linear, so that a
                          // wrong gradient layout shows.
                          return std::vector<VarPtr>{ops::mul(ops::reshape(x[0], {1, n, 1}),
                                                              ops::reshape(x[0], {1, -1, 1}))};
                        }});
      expect_agreement({"identity" + suffix,
                        {uniform(dt, {n}, -1, 1, 41)},
                        [](const std::vector<VarPtr>& x, const FuncPtr&) {
                          return std::vector<VarPtr>{ops::identity(x[0])};
                        }});
    }
    const std::vector<std::pair<Shape, Shape>> shapes = {
        {{1}, {1025}}, {{31, 1}, {31, 33}}, {{3, 1, 5}, {2, 3, 7, 5}}, {{}, {100003}}};
    for (const auto& s : shapes)
      expect_agreement({std::string("broadcast_to ") + dtype_name(dt) + " " + s.first.to_string() +
                            " to " + s.second.to_string(),
                        {uniform(dt, s.first, -1, 1, 42)},
                        [to = s.second](const std::vector<VarPtr>& x, const FuncPtr&) {
                          return std::vector<VarPtr>{ops::broadcast_to(x[0], to)};
                        }});
  }
}

// copy: the run's input (on the CPU or cuda:0) goes to `via` and back, with
// a function applied there; the gradient comes back the same way.
Build round_trip(Device via) {
  return [via](const std::vector<VarPtr>& x, const FuncPtr&) {
    const Device home = x[0]->data.device();
    VarPtr there = ops::copy(x[0], via);
    EXPECT_EQ(there->data.device(), via);
    return std::vector<VarPtr>{ops::copy(ops::mul(there, there), home)};
  };
}

// A machine with one CUDA device runs each test's cuda:0 parts and then
// reports the test skipped (a failure under CH_REQUIRE_GPU=1, as for the tests
// that need two devices throughout).
using ch_gpu_test::two_cuda_devices;
#define CH_SKIP_IF_ONE_DEVICE() \
  if (!two_cuda_devices()) CH_GPU_SKIP_NEEDS_TWO() << "its cuda:1 parts need two CUDA devices"

TEST_F(GpuFunctions, CopyBetweenTheCpuAndBothDevices) {
  for (DType dt : kDtypes)
    for (int64_t n : {int64_t{1}, int64_t{1025}, int64_t{100003}})
      for (Device via : {cpu(), gpu(0), gpu(1)})
        if (via != gpu(1) || two_cuda_devices())
          expect_agreement({std::string("copy ") + dtype_name(dt) + " n=" + std::to_string(n) +
                                " via " + via.to_string(),
                            {uniform(dt, {n}, -1, 1, 50)},
                            round_trip(via)});
  CH_SKIP_IF_ONE_DEVICE();
  expect_agreement({"copy int32 via cuda:1",
                    {labels({1025}, 1 << 30, 51)},
                    [](const std::vector<VarPtr>& x, const FuncPtr&) {
                      return std::vector<VarPtr>{
                          ops::copy(ops::copy(x[0], gpu(1)), x[0]->data.device())};
                    },
                    nullptr,
                    false});
}

// Every function but copy refuses inputs on different devices.
TEST_F(GpuFunctions, InputsOnDifferentDevicesAreRefused) {
  auto on = [](Device d) {
    return std::make_shared<VariableImpl>(uniform(DType::Float32, {2, 3}, -1, 1, 60).to_device(d));
  };
  const std::pair<Device, Device> pairs[] = {{cpu(), gpu(0)}, {gpu(0), gpu(1)}};
  for (const auto& p : pairs) {
    if (p.second == gpu(1) && !two_cuda_devices()) continue;
    VarPtr a = on(p.first), b = on(p.second);
    try {
      ops::concat({a, b}, 0);
      ADD_FAILURE() << "concat of " << p.first.to_string() << " and " << p.second.to_string()
                    << " was accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.status(), CH_ERR_DEVICE) << e.what();
      EXPECT_NE(std::string(e.what()).find(p.second.to_string()), std::string::npos) << e.what();
    }
    try {
      ops::add(a, b);
      ADD_FAILURE() << "add of " << p.first.to_string() << " and " << p.second.to_string()
                    << " was accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.status(), CH_ERR_DEVICE) << e.what();
    }
  }
  CH_SKIP_IF_ONE_DEVICE();
}

// Empty arrays through the array functions.
TEST_F(GpuFunctions, EmptyArrayFunctions) {
  for (DType dt : kDtypes) {
    expect_agreement({std::string("concat of empties ") + dtype_name(dt),
                      {uniform(dt, {0, 3}, -1, 1, 80), uniform(dt, {0, 4}, -1, 1, 81)},
                      concat_along(1)});
    expect_agreement({std::string("transpose empty ") + dtype_name(dt),
                      {uniform(dt, {0, 3, 5}, -1, 1, 82)},
                      transpose_by({2, 0, 1})});
    if (two_cuda_devices())
      expect_agreement({std::string("copy empty via cuda:1 ") + dtype_name(dt),
                        {uniform(dt, {0, 3}, -1, 1, 83)},
                        round_trip(gpu(1))});
  }
  CH_SKIP_IF_ONE_DEVICE();
}

TEST_F(GpuFunctions, ArrayFunctionsCheckBackwardOnTheDevice) {
  const DType dt = DType::Float64;
  expect_check_backward({"concat",
                         {uniform(dt, {2, 3}, -1, 1, 70), uniform(dt, {2, 4}, -1, 1, 71)},
                         [](const std::vector<VarPtr>& x, const FuncPtr&) {
                           VarPtr y = ops::concat(x, 1);
                           return std::vector<VarPtr>{ops::mul(y, y)};
                         }});
  expect_check_backward({"transpose",
                         {uniform(dt, {2, 3, 4}, -1, 1, 72)},
                         [](const std::vector<VarPtr>& x, const FuncPtr&) {
                           const int32_t axes[] = {2, 0, 1};
                           VarPtr y = ops::transpose(x[0], axes, 3);
                           return std::vector<VarPtr>{ops::mul(y, y)};
                         }});
  expect_check_backward({"transpose tiled",
                         {uniform(dt, {3, 5}, -1, 1, 73)},
                         [](const std::vector<VarPtr>& x, const FuncPtr&) {
                           VarPtr y = ops::transpose(x[0], nullptr, 0);
                           return std::vector<VarPtr>{ops::mul(y, y)};
                         }});
  expect_check_backward({"reshape, identity, broadcast_to",
                         {uniform(dt, {3, 1}, -1, 1, 74)},
                         [](const std::vector<VarPtr>& x, const FuncPtr&) {
                           VarPtr y = ops::broadcast_to(ops::identity(x[0]), {2, 3, 4});
                           VarPtr z = ops::reshape(y, {4, 6});
                           return std::vector<VarPtr>{ops::mul(z, z)};
                         }});
  CH_SKIP_IF_ONE_DEVICE();
  expect_check_backward({"copy via cuda:1",
                         {uniform(dt, {5}, -1, 1, 75)},
                         [](const std::vector<VarPtr>& x, const FuncPtr&) {
                           VarPtr y = ops::copy(x[0], gpu(1));
                           return std::vector<VarPtr>{ops::copy(ops::mul(y, y), gpu(0))};
                         }});
}

}  // namespace
}  // namespace gputest
