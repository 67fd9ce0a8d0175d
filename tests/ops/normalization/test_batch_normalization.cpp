// BatchNormalization: training, test and finetune modes against NumPy
// (outputs, gradients of x, gamma and beta, running statistics), numerical
// gradient checks, the process default mode through ch_function_apply,
// start_finetuning, the state API and bad inputs.
#include <cmath>
#include <cstring>

#include "conv_test_util.h"
#include "normalization/batch_normalization_references.h"

namespace {

using namespace optest;
using namespace convtest;

enum { kTrain = 0, kTest = 1, kFinetune = 2 };

// Overwrite an existing array's elements with t's values.
void write_values(const Array& a, const ref::Tensor& t) {
  Array src = make_array(ch_array_dtype(a.get()), t);
  ASSERT_EQ(ch_array_nbytes(a.get()), ch_array_nbytes(src.get()));
  std::memcpy(ch_array_data(a.get()), ch_array_data(src.get()), ch_array_nbytes(src.get()));
}

struct State {
  Array mean, var;
};
State state(const Func& bn) {
  State s;
  OPTEST_OK(ch_functions_batch_normalization_state(s.mean.out(), s.var.out(), bn.get()));
  return s;
}

Func make_bn(const ref_bn::Case& c) {
  Func f;
  OPTEST_OK(ch_functions_batch_normalization_new(
      f.out(), c.x.shape + 1, static_cast<int32_t>(c.size_ndim), c.decay, c.eps, c.dtype));
  write_values(param(f, 0).value, c.gamma);
  write_values(param(f, 1).value, c.beta);
  State s = state(f);
  write_values(s.mean, c.avg_mean0);
  write_values(s.var, c.avg_var0);
  return f;
}

ch_status apply_mode(const Func& f, int64_t mode, ch_variable* x, ch_variable** out) {
  return ch_functions_batch_normalization_apply(
      out, f.get(), x, mode == kTest ? CH_MODE_TEST : CH_MODE_TRAIN, mode == kFinetune ? 1 : 0);
}

class BNRef : public LeakChecked<::testing::TestWithParam<ref_bn::Case>> {};

TEST_P(BNRef, ForwardBackwardAndStatistics) {
  const ref_bn::Case& c = GetParam();
  Func f = make_bn(c);
  Array xa = make_array(c.dtype, c.x);
  Var x = make_var(xa), y;
  ASSERT_EQ(apply_mode(f, c.mode, x.get(), y.out()), CH_OK) << ch_error_message();
  EXPECT_EQ(creator_name(y), "BatchNormalization");
  EXPECT_TRUE(all_close(data_of(y).get(), c.dtype, c.y, fwd_tol(c.dtype)));
  EXPECT_TRUE(all_close(xa.get(), c.dtype, c.x, Tol{0, 0})) << "x changed";
  if (c.mode == kFinetune) {  // a second batch: population statistics of both
    Var x2 = make_var(make_array(c.dtype, c.x2)), y2;
    ASSERT_EQ(apply_mode(f, c.mode, x2.get(), y2.out()), CH_OK) << ch_error_message();
  }
  State s = state(f);
  EXPECT_TRUE(all_close(s.mean.get(), c.dtype, c.avg_mean1, fwd_tol(c.dtype))) << "avg_mean";
  EXPECT_TRUE(all_close(s.var.get(), c.dtype, c.avg_var1, fwd_tol(c.dtype))) << "avg_var";
  Array gy = make_array(c.dtype, c.gy);
  backward(y, gy);
  EXPECT_TRUE(all_close(grad_of(x).get(), c.dtype, c.gx, bwd_tol(c.dtype)));
  EXPECT_TRUE(all_close(param(f, 0).grad.get(), c.dtype, c.ggamma, bwd_tol(c.dtype))) << "ggamma";
  EXPECT_TRUE(all_close(param(f, 1).grad.get(), c.dtype, c.gbeta, bwd_tol(c.dtype))) << "gbeta";
}

TEST_P(BNRef, CheckBackward) {
  const ref_bn::Case& c = GetParam();
  Func f = make_bn(c);
  Array x = make_array(c.dtype, c.x), gy = make_array(c.dtype, c.gy);
  Build build = [&c, &f](ch_variable* const* in, size_t, ch_variable** out) {
    return apply_mode(f, c.mode, in[0], out);
  };
  CheckTol t = check_tol(c.dtype);
  if (c.dtype == CH_FLOAT32) t = CheckTol{1e-2, 1e-2, 1e-2};  // normalization amplifies rounding
  EXPECT_EQ(check_backward(build, {&x}, &gy, t), CH_OK) << ch_error_message();
}

// y is linear in gamma and beta: central differences are exact up to
// rounding. Training cases go through ch_function_apply (process default:
// train), the others through the explicit mode.
TEST_P(BNRef, ParameterGradientsNumerically) {
  const ref_bn::Case& c = GetParam();
  ASSERT_EQ(ch_config_train(), 1);
  Func f = make_bn(c);
  Array x = make_array(c.dtype, c.x), gy = make_array(c.dtype, c.gy);
  const double eps = c.dtype == CH_FLOAT64 ? 1e-3 : 1e-1;
  const Tol tol = c.dtype == CH_FLOAT64 ? Tol{1e-9, 1e-9} : Tol{2e-3, 2e-3};
  ApplyFn apply = apply_ok;
  if (c.mode != kTrain)
    apply = [&c](const Func& fn, const Var& v) {
      Var y;
      OPTEST_OK(apply_mode(fn, c.mode, v.get(), y.out()));
      return y;
    };
  EXPECT_TRUE(param_grad_matches(f, x, gy, 0, eps, tol, apply));
  EXPECT_TRUE(param_grad_matches(f, x, gy, 1, eps, tol, apply));
}

INSTANTIATE_TEST_SUITE_P(NumPy, BNRef, ::testing::ValuesIn(ref_bn::cases),
                         [](const ::testing::TestParamInfo<ref_bn::Case>& i) {
                           return std::string(i.param.name);
                         });

using BNTest = OpTest;

TEST_F(BNTest, ParametersAndInitialState) {
  const int64_t size[] = {3};
  for (ch_dtype dt : {CH_FLOAT32, CH_FLOAT64}) {
    Func f;
    ASSERT_EQ(ch_functions_batch_normalization_new(f.out(), size, 1, 0.9, 1e-5, dt), CH_OK);
    ASSERT_EQ(ch_function_parameter_count(f.get()), 2u);
    EXPECT_EQ(param(f, 0).name, "gamma");
    EXPECT_EQ(param(f, 1).name, "beta");
    EXPECT_TRUE(all_equal(param(f, 0).value, dt, {3}, {1, 1, 1}));
    EXPECT_TRUE(all_equal(param(f, 1).value, dt, {3}, {0, 0, 0}));
    State s = state(f);
    EXPECT_TRUE(all_equal(s.mean, dt, {3}, {0, 0, 0}));
    EXPECT_TRUE(all_equal(s.var, dt, {3}, {0, 0, 0}));
    Array only_var;
    EXPECT_EQ(ch_functions_batch_normalization_state(nullptr, only_var.out(), f.get()), CH_OK);
    EXPECT_TRUE(only_var);
  }
}

// ch_function_apply follows ch_config_set_train: test mode uses the running
// statistics (here those of the test_nd case) exactly as the explicit mode.
TEST_F(BNTest, DefaultModeFollowsConfig) {
  const ref_bn::Case* c = nullptr;
  for (const ref_bn::Case& k : ref_bn::cases)
    if (std::string(k.name) == "test_nd_f64") c = &k;
  ASSERT_NE(c, nullptr);
  Func f = make_bn(*c);
  Var x = make_var(make_array(c->dtype, c->x));
  ch_config_set_train(0);
  Var y;
  const ch_status st = apply_fn(f.get(), x.get(), y.out());
  ch_config_set_train(1);
  ASSERT_EQ(st, CH_OK) << ch_error_message();
  EXPECT_TRUE(all_close(data_of(y).get(), c->dtype, c->y, fwd_tol(c->dtype)));
  Var z = apply_ok(f, x);  // train mode again: batch statistics, not c->y
  std::vector<double> yz = values_of(z);
  EXPECT_GT(std::fabs(yz[0] - c->y.data[0]), 1e-3);
}

// After start_finetuning the next finetune batch replaces the statistics
// (decay 1 - 1/1 = 0): mean of the batch and its unbiased variance.
TEST_F(BNTest, StartFinetuningRestartsTheCount) {
  const int64_t size[] = {1};
  Func f;
  ASSERT_EQ(ch_functions_batch_normalization_new(f.out(), size, 1, 0.9, 1e-5, CH_FLOAT64), CH_OK);
  Var a = make_var(CH_FLOAT64, {2, 1}, {1, 3}), b = make_var(CH_FLOAT64, {2, 1}, {10, 14}), y;
  ASSERT_EQ(ch_functions_batch_normalization_apply(y.out(), f.get(), a.get(), CH_MODE_TRAIN, 1),
            CH_OK);
  ASSERT_EQ(ch_functions_batch_normalization_start_finetuning(f.get()), CH_OK);
  ASSERT_EQ(ch_functions_batch_normalization_apply(y.out(), f.get(), b.get(), CH_MODE_TEST, 1),
            CH_OK);
  State s = state(f);
  EXPECT_TRUE(all_equal(s.mean, CH_FLOAT64, {1}, {12}));
  EXPECT_TRUE(all_equal(s.var, CH_FLOAT64, {1}, {8}));  // biased var 4, times m/(m-1) = 2
}

// Test mode's backward uses the running averages as its forward saw them,
// even after a training application of the same function moved them before
// the backward: gx = gamma * gy / sqrt(var + eps) and ggamma = sum(gy *
// (x - mean) / sqrt(var + eps)) with the averages at forward time.
TEST_F(BNTest, TestModeBackwardKeepsTheAveragesOfItsForward) {
  const int64_t size[] = {2};
  Func f;
  ASSERT_EQ(ch_functions_batch_normalization_new(f.out(), size, 1, 0.5, 1e-5, CH_FLOAT64), CH_OK);
  auto set = [](const Array& a, const std::vector<double>& v) {
    Array src = make_array(CH_FLOAT64, {static_cast<int64_t>(v.size())}, v);
    std::memcpy(ch_array_data(a.get()), ch_array_data(src.get()), ch_array_nbytes(src.get()));
  };
  State s = state(f);
  set(s.mean, {1.0, -2.0});
  set(s.var, {4.0, 0.25});
  set(param(f, 0).value, {3.0, 0.5});
  Var x = make_var(CH_FLOAT64, {2, 2}, {1, 2, 3, 4}), y;
  ASSERT_EQ(ch_functions_batch_normalization_apply(y.out(), f.get(), x.get(), CH_MODE_TEST, 0),
            CH_OK);
  Var x2 = make_var(CH_FLOAT64, {2, 2}, {10, 20, 30, 40}), y2;
  ASSERT_EQ(ch_functions_batch_normalization_apply(y2.out(), f.get(), x2.get(), CH_MODE_TRAIN, 0),
            CH_OK);
  EXPECT_NE(values_of(state(f).mean.get())[0], 1.0);  // the averages moved
  backward(y, make_array(CH_FLOAT64, {2, 2}, {1, -1, 2, 0.5}));
  const double i0 = 1 / std::sqrt(4.0 + 1e-5), i1 = 1 / std::sqrt(0.25 + 1e-5);
  const std::vector<double> gx = values_of(grad_of(x).get());
  const std::vector<double> want_gx = {3 * i0, -0.5 * i1, 6 * i0, 0.25 * i1};
  ASSERT_EQ(gx.size(), want_gx.size());
  for (size_t i = 0; i < gx.size(); ++i) EXPECT_NEAR(gx[i], want_gx[i], 1e-12) << i;
  const std::vector<double> gg = values_of(param(f, 0).grad.get());
  ASSERT_EQ(gg.size(), 2u);
  EXPECT_NEAR(gg[0], (1 * (1 - 1.0) + 2 * (3 - 1.0)) * i0, 1e-12);
  EXPECT_NEAR(gg[1], (-1 * (2 + 2.0) + 0.5 * (4 + 2.0)) * i1, 1e-12);
}

TEST_F(BNTest, BadInputs) {
  const int64_t size[] = {3};
  Func f;
  ASSERT_EQ(ch_functions_batch_normalization_new(f.out(), size, 1, 0.9, 1e-5, CH_FLOAT32), CH_OK);
  Var y;
  Var wrong = make_var(iota(CH_FLOAT32, {2, 4}));
  EXPECT_TRUE(
      fails_with(apply_fn(f.get(), wrong.get(), y.out()), CH_ERR_SHAPE, {"(2, 4)", "(3,)"}));
  Var r1 = make_var(iota(CH_FLOAT32, {3}));
  EXPECT_TRUE(fails_with(apply_fn(f.get(), r1.get(), y.out()), CH_ERR_SHAPE, {"(3,)"}));
  Var f64 = make_var(iota(CH_FLOAT64, {2, 3}));
  EXPECT_TRUE(fails_with(
      ch_functions_batch_normalization_apply(y.out(), f.get(), f64.get(), CH_MODE_TRAIN, 0),
      CH_ERR_DTYPE, {"float64", "float32"}));
  Var i32 = make_var(iota(CH_INT32, {2, 3}));
  EXPECT_TRUE(fails_with(apply_fn(f.get(), i32.get(), y.out()), CH_ERR_DTYPE, {"int32"}));
  EXPECT_FALSE(y);

  Func conv;
  ASSERT_EQ(ch_functions_convolution_2d_new(conv.out(), 1, 1, 1, 1, 1, 1, 0, 0, CH_FLOAT32, 1, 0, 0,
                                            nullptr, nullptr),
            CH_OK);
  Array m;
  EXPECT_TRUE(fails_with(ch_functions_batch_normalization_state(m.out(), nullptr, conv.get()),
                         CH_ERR_INVALID_ARGUMENT, {"Convolution2D"}));
  Var x = make_var(iota(CH_FLOAT32, {2, 1, 2, 2}));
  EXPECT_TRUE(fails_with(ch_functions_batch_normalization_apply(y.out(), conv.get(), x.get(), 1, 0),
                         CH_ERR_INVALID_ARGUMENT, {"not a BatchNormalization"}));
  EXPECT_FALSE(m);

  Func g;
  EXPECT_TRUE(fails_with(
      ch_functions_batch_normalization_new(g.out(), size, 1, 0.9, 1e-5, CH_INT32), CH_ERR_DTYPE));
  EXPECT_TRUE(
      fails_with(ch_functions_batch_normalization_new(g.out(), size, 0, 0.9, 1e-5, CH_FLOAT32),
                 CH_ERR_INVALID_ARGUMENT, {"at least one"}));
  const int64_t zero[] = {0};
  EXPECT_TRUE(
      fails_with(ch_functions_batch_normalization_new(g.out(), zero, 1, 0.9, 1e-5, CH_FLOAT32),
                 CH_ERR_INVALID_ARGUMENT, {"(0,)"}));
  EXPECT_TRUE(fails_with(ch_functions_batch_normalization_new(g.out(), size, 1, 0.9, 0, CH_FLOAT32),
                         CH_ERR_INVALID_ARGUMENT, {"eps 0"}));
  EXPECT_FALSE(g);
  EXPECT_TRUE(fails_with(ch_functions_batch_normalization_apply(y.out(), nullptr, x.get(), 1, 0),
                         CH_ERR_NULL_HANDLE, {"bn"}));
  EXPECT_TRUE(
      fails_with(ch_functions_batch_normalization_start_finetuning(nullptr), CH_ERR_NULL_HANDLE));
  EXPECT_TRUE(
      fails_with(ch_functions_batch_normalization_new(nullptr, size, 1, 0.9, 1e-5, CH_FLOAT32),
                 CH_ERR_INVALID_ARGUMENT, {"out"}));
}

}  // namespace
