// Inception: forward, input and parameter gradients against a NumPy
// composition of direct-loop convolutions and max pooling, numerical checks,
// parameter names and shapes, bad inputs.
#include <cstring>

#include "connection/inception_references.h"
#include "conv_test_util.h"

namespace {

using namespace optest;
using namespace convtest;

// The case's parameter values, W and b per sub-convolution, in module order.
std::vector<const ref::Tensor*> param_values(const ref_inception::Case& c) {
  return {&c.conv1_W, &c.conv1_b, &c.conv3_W, &c.conv3_b, &c.conv5_W, &c.conv5_b,
          &c.proj3_W, &c.proj3_b, &c.proj5_W, &c.proj5_b, &c.projp_W, &c.projp_b};
}
std::vector<const ref::Tensor*> param_grads(const ref_inception::Case& c) {
  return {&c.conv1_gW, &c.conv1_gb, &c.conv3_gW, &c.conv3_gb, &c.conv5_gW, &c.conv5_gb,
          &c.proj3_gW, &c.proj3_gb, &c.proj5_gW, &c.proj5_gb, &c.projp_gW, &c.projp_gb};
}

Func make_inception(const ref_inception::Case& c) {
  Func f;
  OPTEST_OK(ch_functions_inception_new(f.out(), c.in_channels, c.out1, c.proj3, c.out3, c.proj5,
                                       c.out5, c.proj_pool, c.dtype));
  std::vector<const ref::Tensor*> vals = param_values(c);
  for (size_t i = 0; i < vals.size(); ++i) {
    Param p = param(f, i);
    Array src = make_array(c.dtype, *vals[i]);
    if (ch_array_nbytes(p.value.get()) != ch_array_nbytes(src.get()))
      throw std::runtime_error("parameter " + p.name + " has another size than the reference");
    std::memcpy(ch_array_data(p.value.get()), ch_array_data(src.get()), ch_array_nbytes(src.get()));
  }
  return f;
}

class InceptionRef : public LeakChecked<::testing::TestWithParam<ref_inception::Case>> {};

TEST_P(InceptionRef, ForwardAndBackward) {
  const ref_inception::Case& c = GetParam();
  Func f = make_inception(c);
  Array xa = make_array(c.dtype, c.x);
  Var x = make_var(xa);
  Var y = apply_ok(f, x);
  EXPECT_EQ(creator_name(y), "Inception");
  EXPECT_TRUE(all_close(data_of(y).get(), c.dtype, c.y, fwd_tol(c.dtype)));
  EXPECT_TRUE(all_close(xa.get(), c.dtype, c.x, Tol{0, 0})) << "x changed";
  Array gy = make_array(c.dtype, c.gy);
  backward(y, gy);
  EXPECT_TRUE(all_close(grad_of(x).get(), c.dtype, c.gx, bwd_tol(c.dtype)));
  std::vector<const ref::Tensor*> grads = param_grads(c);
  for (size_t i = 0; i < grads.size(); ++i) {
    Param p = param(f, i);
    EXPECT_TRUE(all_close(p.grad.get(), c.dtype, *grads[i], bwd_tol(c.dtype))) << p.name;
  }
  EXPECT_TRUE(all_close(gy.get(), c.dtype, c.gy, Tol{0, 0})) << "backward modified gy";
}

TEST_P(InceptionRef, CheckBackward) {
  const ref_inception::Case& c = GetParam();
  Func f = make_inception(c);
  Array x = make_array(c.dtype, c.x), gy = make_array(c.dtype, c.gy);
  ch_array* xs[1] = {x.get()};
  ch_array* gys[1] = {gy.get()};
  // The module is piecewise linear in x (convolutions, relu, max): central
  // differences have no truncation error away from kinks, so float32 takes a
  // larger step (5e-3, below the references' 0.02 margin) to shrink the
  // rounding error of ~6e-8 |y| per output divided by the step.
  CheckTol t = check_tol(c.dtype);
  if (c.dtype == CH_FLOAT32) t.eps = 5e-3;
  EXPECT_EQ(ch_check_backward(f.get(), xs, 1, gys, 1, t.eps, t.atol, t.rtol), CH_OK)
      << ch_error_message();
}

// The projections' W enter through relu: central differences with a small
// step stay on one side of every kink (the references keep pre-activations
// 0.02 away from 0).
TEST_P(InceptionRef, ParameterGradientsNumerically) {
  const ref_inception::Case& c = GetParam();
  Func f = make_inception(c);
  Array x = make_array(c.dtype, c.x), gy = make_array(c.dtype, c.gy);
  const double eps = c.dtype == CH_FLOAT64 ? 1e-6 : 1e-3;
  const Tol tol = c.dtype == CH_FLOAT64 ? Tol{1e-7, 1e-7} : Tol{1e-2, 1e-2};
  for (size_t i = 0; i < 12; ++i)
    EXPECT_TRUE(param_grad_matches(f, x, gy, i, eps, tol)) << "parameter " << i;
}

INSTANTIATE_TEST_SUITE_P(NumPy, InceptionRef, ::testing::ValuesIn(ref_inception::cases),
                         [](const ::testing::TestParamInfo<ref_inception::Case>& i) {
                           return std::string(i.param.name);
                         });

using InceptionTest = OpTest;

TEST_F(InceptionTest, ParametersAndOutputShape) {
  Func f;
  ASSERT_EQ(ch_functions_inception_new(f.out(), 4, 3, 2, 5, 2, 6, 7, CH_FLOAT32), CH_OK)
      << ch_error_message();
  ASSERT_EQ(ch_function_parameter_count(f.get()), 12u);
  const char* names[] = {"conv1/W", "conv1/b", "conv3/W", "conv3/b", "conv5/W", "conv5/b",
                         "proj3/W", "proj3/b", "proj5/W", "proj5/b", "projp/W", "projp/b"};
  const Shape shapes[] = {{3, 4, 1, 1}, {3}, {5, 2, 3, 3}, {5}, {6, 2, 5, 5}, {6},
                          {2, 4, 1, 1}, {2}, {2, 4, 1, 1}, {2}, {7, 4, 1, 1}, {7}};
  for (size_t i = 0; i < 12; ++i) {
    Param p = param(f, i);
    EXPECT_EQ(p.name, names[i]);
    EXPECT_EQ(shape_of(p.value.get()), shapes[i]) << names[i];
  }
  Var x = make_var(iota(CH_FLOAT32, {2, 4, 6, 5}));
  Var y = apply_ok(f, x);
  EXPECT_EQ(shape_of(y), (Shape{2, 3 + 5 + 6 + 7, 6, 5}));
}

TEST_F(InceptionTest, BadInputs) {
  Func f;
  ASSERT_EQ(ch_functions_inception_new(f.out(), 3, 1, 1, 1, 1, 1, 1, CH_FLOAT64), CH_OK);
  Var y;
  Var r3 = make_var(iota(CH_FLOAT64, {3, 4, 4}));
  EXPECT_TRUE(fails_with(apply_fn(f.get(), r3.get(), y.out()), CH_ERR_SHAPE, {"4-d", "(3, 4, 4)"}));
  Var chans = make_var(iota(CH_FLOAT64, {1, 2, 4, 4}));
  EXPECT_TRUE(fails_with(apply_fn(f.get(), chans.get(), y.out()), CH_ERR_SHAPE,
                         {"2 channels", "in_channels 3"}));
  Var f32 = make_var(iota(CH_FLOAT32, {1, 3, 4, 4}));
  EXPECT_TRUE(
      fails_with(apply_fn(f.get(), f32.get(), y.out()), CH_ERR_DTYPE, {"float32", "float64"}));
  EXPECT_FALSE(y);
  Func g;
  EXPECT_TRUE(fails_with(ch_functions_inception_new(g.out(), 3, 1, 0, 1, 1, 1, 1, CH_FLOAT32),
                         CH_ERR_INVALID_ARGUMENT, {"proj3 0"}));
  EXPECT_TRUE(
      fails_with(ch_functions_inception_new(g.out(), 3, 1, 1, 1, 1, 1, 1, CH_INT32), CH_ERR_DTYPE));
  EXPECT_FALSE(g);
}

}  // namespace
