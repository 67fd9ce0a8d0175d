// CPU / emulated-GPU agreement of the connection functions: Linear,
// Convolution2D (stride, padding, nobias), EmbedID, Parameter and Inception,
// forward, input gradients and parameter gradients, in float32 and float64;
// check_backward and the parameters' gradients against central differences
// on cuda:0; EmbedID's out-of-range ids give the CPU's status and message;
// the dtype conversion kernel equal to the CPU's element for element.
#include <ch/ch.h>

#include <cmath>

#include "../require_gpu.h"
#include "agreement.h"
#include "core/gradient_check.h"
#include "kernels/array.h"
#include "kernels/connection.h"
#include "kernels/pooling.h"
#include "parameter_check.h"

namespace gputest {
namespace {

using namespace chainerc;

const DType kDtypes[] = {DType::Float32, DType::Float64};

Build apply_fn() {
  return [](const std::vector<VarPtr>& x, const FuncPtr& fn) {
    return std::vector<VarPtr>{apply1(fn, x)};
  };
}

std::string name_of(const char* what, DType dt, const std::string& rest) {
  return std::string(what) + " " + dtype_name(dt) + " " + rest;
}

// ---- Linear

TEST_F(GpuFunctions, LinearAtEverySize) {
  // (batch, in, out): one element, odd sizes, an output wider than a block.
  const int64_t shapes[][3] = {{1, 1, 1}, {31, 17, 5}, {7, 1025, 3}, {1025, 3, 300}};
  for (DType dt : kDtypes)
    for (bool nobias : {false, true})
      for (const auto& s : shapes)
        expect_agreement({name_of("Linear", dt,
                                  std::to_string(s[0]) + "x" + std::to_string(s[1]) + "->" +
                                      std::to_string(s[2]) + (nobias ? " nobias" : "")),
                          {uniform(dt, {s[0], s[1]}, -1, 1, 41)},
                          apply_fn(),
                          ops::linear_new(s[1], s[2], dt, 1.0, 0.25, nobias, nullptr, nullptr)});
}

TEST_F(GpuFunctions, LinearCheckBackward) {
  for (bool nobias : {false, true}) {
    const Case c{std::string("Linear check_backward") + (nobias ? " nobias" : ""),
                 {uniform(DType::Float64, {3, 4}, -1, 1, 42)},
                 apply_fn(),
                 ops::linear_new(4, 5, DType::Float64, 1.0, 0.5, nobias, nullptr, nullptr)};
    expect_check_backward(c);
    expect_parameter_gradients(c);
  }
}

// ---- Convolution2D

struct ConvShape {
  const char* what;
  int64_t n, c, h, w, o, kh, kw, sy, sx, ph, pw;
  bool nobias;
};
const ConvShape kConvShapes[] = {
    {"3x3", 2, 3, 7, 6, 4, 3, 3, 1, 1, 0, 0, false},
    {"stride 2x3 pad 1x2", 3, 2, 9, 8, 5, 3, 2, 2, 3, 1, 2, false},
    {"nobias pad 1", 2, 3, 5, 5, 2, 3, 3, 1, 1, 1, 1, true},
    {"1x1", 5, 4, 3, 3, 3, 1, 1, 1, 1, 0, 0, false},
    {"kernel wider than the image, padded", 1, 1, 3, 2, 2, 3, 4, 1, 1, 1, 2, false},
    {"stride 2 pad 2 nobias", 4, 2, 6, 7, 3, 2, 3, 2, 2, 2, 2, true},
};

FuncPtr conv_function(const ConvShape& s, DType dt) {
  return ops::convolution_2d_new(s.c, s.o, s.kh, s.kw, s.sy, s.sx, s.ph, s.pw, dt, 1.0, 0.1,
                                 s.nobias, nullptr, nullptr);
}

TEST_F(GpuFunctions, Convolution2DStridePaddingNobias) {
  for (DType dt : kDtypes)
    for (const ConvShape& s : kConvShapes)
      expect_agreement({name_of("Convolution2D", dt, s.what),
                        {uniform(dt, {s.n, s.c, s.h, s.w}, -1, 1, 43)},
                        apply_fn(),
                        conv_function(s, dt)});
}

TEST_F(GpuFunctions, Convolution2DCheckBackward) {
  // Small (every parameter element is perturbed): stride and padding along
  // one axis each, and nobias with padding on both.
  const ConvShape small[] = {{"stride 2x1 pad 1x0", 2, 2, 5, 4, 2, 2, 3, 2, 1, 1, 0, false},
                             {"nobias pad 1", 2, 1, 4, 4, 2, 3, 3, 1, 1, 1, 1, true}};
  for (const ConvShape& s : small) {
    const Case c{std::string("Convolution2D check_backward ") + s.what,
                 {uniform(DType::Float64, {s.n, s.c, s.h, s.w}, -1, 1, 44)},
                 apply_fn(),
                 conv_function(s, DType::Float64)};
    expect_check_backward(c);
    expect_parameter_gradients(c);
  }
}

// ---- EmbedID

Array ids(const Shape& shape, int32_t in_size, uint32_t seed) {
  return labels(shape, in_size, seed);
}

TEST_F(GpuFunctions, EmbedIDAtEverySize) {
  // ids of several shapes (repeated ids: the scatter-add collides), rows
  // narrower than a warp and wider than a block.
  const std::vector<Shape> id_shapes = {{1}, {31}, {5, 7}, {1025}};
  for (DType dt : kDtypes)
    for (const Shape& s : id_shapes)
      for (int64_t out : {1, 3, 300})
        expect_agreement({name_of("EmbedID", dt, s.to_string() + " out " + std::to_string(out)),
                          {ids(s, 13, 45)},
                          apply_fn(),
                          ops::embed_id_new(13, out, dt, nullptr),
                          true,
                          // by W's dtype (the only input is int32)
                          dt == DType::Float32 ? 1e-4 : 1e-9,
                          dt == DType::Float32 ? 1e-5 : 1e-11});
}

// Under the determinism switch the scatter-add runs in id order, without
// atomics: the same sums as the CPU.
TEST_F(GpuFunctions, EmbedIDDeterministic) {
  ch_config_set_deterministic(1);
  for (DType dt : kDtypes)
    expect_agreement({name_of("EmbedID deterministic", dt, "(1025) out 3"),
                      {ids({1025}, 13, 46)},
                      apply_fn(),
                      ops::embed_id_new(13, 3, dt, nullptr),
                      true,
                      dt == DType::Float32 ? 1e-4 : 1e-9,
                      dt == DType::Float32 ? 1e-5 : 1e-11});
  ch_config_set_deterministic(0);
}

TEST_F(GpuFunctions, EmbedIDParameterGradients) {
  expect_parameter_gradients({"EmbedID",
                              {ids({2, 3}, 4, 46)},
                              apply_fn(),
                              ops::embed_id_new(4, 3, DType::Float64, nullptr)});
}

TEST_F(GpuFunctions, EmbedIDOutOfRangeIdsGiveTheCpuError) {
  const FuncPtr f = ops::embed_id_new(5, 2, DType::Float32, nullptr);
  Array x = ids({3, 4}, 5, 47);
  x.data<int32_t>()[6] = 5;
  x.data<int32_t>()[9] = -1;
  expect_same_error({"EmbedID id = in_size", {x}, apply_fn(), f}, CH_ERR_INVALID_ARGUMENT,
                    "id 5 at position (1, 2) is out of range [0, 5)");
  Array big = ids({100003}, 5, 48);
  big.data<int32_t>()[100000] = -3;
  big.data<int32_t>()[65537] = 1 << 30;
  expect_same_error({"EmbedID ids far apart", {big}, apply_fn(), f}, CH_ERR_INVALID_ARGUMENT,
                    "id 1073741824 at position (65537,) is out of range [0, 5)");
}

// ---- Parameter

TEST_F(GpuFunctions, ParameterAtEverySize) {
  for (DType dt : kDtypes)
    for (int64_t n : pointwise_sizes())
      expect_agreement({name_of("Parameter", dt, std::to_string(n)),
                        {},
                        apply_fn(),
                        ops::parameter_new(uniform(dt, {n}, -1, 1, 49))});
  const Case c{
      "Parameter", {}, apply_fn(), ops::parameter_new(uniform(DType::Float64, {2, 3}, -1, 1, 50))};
  expect_parameter_gradients(c);
}

// ---- Inception (max pooling and concat come from other groups' kernels)

TEST_F(GpuFunctions, Inception) {
  if (!kernels::max_pool_2d_forward.implemented_for(CH_DEVICE_CUDA) ||
      !kernels::concat.implemented_for(CH_DEVICE_CUDA))
    GTEST_SKIP() << "max pooling or concat has no CUDA kernel in this build";
  for (DType dt : kDtypes)
    expect_agreement({name_of("Inception", dt, "(2, 3, 5, 6)"),
                      {uniform(dt, {2, 3, 5, 6}, -1, 1, 51)},
                      apply_fn(),
                      ops::inception_new(3, 2, 2, 3, 2, 2, 2, dt)});
  // Parameters from a fixed seed: check_backward's central differences must
  // not straddle a relu or max-pooling kink, which depends on the random
  // initial parameters (and so on what earlier tests drew).
  ch_config_seed(7);
  expect_check_backward({"Inception check_backward",
                         {uniform(DType::Float64, {1, 2, 4, 3}, -1, 1, 52)},
                         apply_fn(),
                         ops::inception_new(2, 1, 2, 2, 1, 2, 1, DType::Float64)});
}

// Inception's sub-convolutions read the parameter list the object holds now
// (with_parameters_on gives a clone another list): with every parameter of
// the clone's list zero, every branch is 0 and so is the output. Runs on the
// CPU (no device needed).
TEST(InceptionParameters, AClonesOwnListIsTheOneUsed) {
  const FuncPtr f = ops::inception_new(2, 1, 2, 2, 1, 2, 1, DType::Float64);
  const FuncPtr g = with_parameters_on(f, cpu());
  for (chainerc::Parameter& p : *g->parameters) p.param.fill(0.0);
  const Array x = uniform(DType::Float64, {1, 2, 4, 3}, -1, 1, 55);
  const Array y = apply1(g, {std::make_shared<VariableImpl>(x)})->data;
  for (int64_t i = 0; i < y.size(); ++i) ASSERT_EQ(y.get(i), 0.0) << "element " << i;
  // The original still uses its own (random) parameters.
  const Array y0 = apply1(f, {std::make_shared<VariableImpl>(x)})->data;
  double sum = 0;
  for (int64_t i = 0; i < y0.size(); ++i) sum += std::abs(y0.get(i));
  EXPECT_GT(sum, 0.0);
}

// ---- on the second device: the kernels make the arrays' device current

TEST_F(GpuFunctions, ConvolutionAndLossesOnTheSecondDevice) {
  if (!ch_gpu_test::two_cuda_devices()) CH_GPU_SKIP_NEEDS_TWO() << "one CUDA device only";
  const Device second = gpu(1);
  const ConvShape& s = kConvShapes[1];
  const FuncPtr conv = conv_function(s, DType::Float64);
  const Array x = uniform(DType::Float64, {s.n, s.c, s.h, s.w}, -1, 1, 53);
  const Array t = labels({s.n}, 20, 54);  // y has 5 * 5 * 4 values per sample
  // conv -> reshape (N, O*oh*ow) -> softmax_cross_entropy, and its backward.
  auto run = [&](Device d, Arrays& grads) {
    const VarPtr xv = std::make_shared<VariableImpl>(x.to_device(d));
    const VarPtr tv = std::make_shared<VariableImpl>(t.to_device(d));
    const FuncPtr f = with_parameters_on(conv, d);
    const VarPtr y = apply1(f, {xv});
    const VarPtr loss = ops::softmax_cross_entropy(ops::reshape(y, {s.n, -1}), tv);
    EXPECT_EQ(loss->data.device(), d);
    chainerc::backward(loss, false);
    grads = {xv->grad.to_device(cpu()), (*f->parameters)[0].grad.to_device(cpu()),
             (*f->parameters)[1].grad.to_device(cpu())};
    return loss->data.to_device(cpu());
  };
  Arrays on_cpu, on_second;
  const Array l_cpu = run(cpu(), on_cpu), l_second = run(second, on_second);
  EXPECT_TRUE(allclose(l_second, l_cpu, 1e-11, 1e-9, nullptr, nullptr));
  for (size_t i = 0; i < on_cpu.size(); ++i)
    EXPECT_TRUE(allclose(on_second[i], on_cpu[i], 1e-11, 1e-9, nullptr, nullptr))
        << "gradient " << i;
}

// Inputs and parameters on two devices are refused with CH_ERR_DEVICE.
TEST_F(GpuFunctions, ConnectionsRefuseArraysOnTwoDevices) {
  const Array x = uniform(DType::Float32, {2, 3}, -1, 1, 56);
  const Array x4 = uniform(DType::Float32, {1, 3, 4, 4}, -1, 1, 57);
  const struct {
    const char* name;
    FuncPtr f;
    Array input;
  } cases[] = {
      {"Linear", ops::linear_new(3, 2, DType::Float32, 1, 0, false, nullptr, nullptr), x},
      {"Convolution2D",
       ops::convolution_2d_new(3, 2, 3, 3, 1, 1, 0, 0, DType::Float32, 1, 0, false, nullptr,
                               nullptr),
       x4},
      {"EmbedID", ops::embed_id_new(5, 2, DType::Float32, nullptr), ids({3}, 5, 58)},
  };
  for (const auto& c : cases)
    for (bool params_on_gpu : {false, true}) {
      // The input on one device, the parameters on the other.
      const FuncPtr f = with_parameters_on(c.f, params_on_gpu ? gpu() : cpu());
      const Array in = c.input.to_device(params_on_gpu ? cpu() : gpu());
      try {
        apply1(f, {std::make_shared<VariableImpl>(in)});
        ADD_FAILURE() << c.name << ": no error";
      } catch (const chainerc::Error& e) {
        EXPECT_EQ(e.status(), CH_ERR_DEVICE) << c.name << ": " << e.what();
      }
    }
}

// ---- the dtype conversion kernel

TEST_F(GpuFunctions, ConvertDtypeEqualsTheCpu) {
  const DType all[] = {DType::Float32, DType::Float64, DType::Int32};
  for (DType from : all)
    for (DType to : all) {
      SCOPED_TRACE(std::string(dtype_name(from)) + " -> " + dtype_name(to));
      // Fractions and negatives (truncation to int32), values beyond
      // float32's integers (rounding).
      Array x = Array::empty(from, {1025});
      for (int64_t i = 0; i < x.size(); ++i) {
        const double v = (i % 2 ? -1.0 : 1.0) * (double(i) * 0.37 + double(i % 7) * 16777217.0);
        if (from == DType::Int32)
          x.data<int32_t>()[i] = static_cast<int32_t>(v);
        else if (from == DType::Float32)
          x.data<float>()[i] = static_cast<float>(v);
        else
          x.data<double>()[i] = v;
      }
      Array on_cpu = Array::empty(to, x.shape());
      kernels::convert_dtype(x, on_cpu);
      const Array xg = x.to_device(gpu());
      Array on_gpu = Array::empty(to, x.shape(), gpu());
      kernels::convert_dtype(xg, on_gpu);
      const Array back = on_gpu.to_device(cpu());
      for (int64_t i = 0; i < x.size(); ++i)
        ASSERT_EQ(back.get(i), on_cpu.get(i)) << "element " << i;
    }
}

}  // namespace
}  // namespace gputest
