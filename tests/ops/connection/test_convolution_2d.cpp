// Convolution2D: forward and gradients against NumPy (direct-loop
// references), numerical checks of gx, gW and gb, parameters and their
// initialisation, accumulation of parameter gradients, batches larger than
// one column chunk, and bad inputs.
#include <cmath>

#include "connection/convolution_2d_references.h"
#include "conv_test_util.h"

namespace {

using namespace optest;
using namespace convtest;

Func make_conv(const ref_conv2d::Case& c) {
  Array W = make_array(c.dtype, c.W);
  Array b = c.nobias ? Array() : make_array(c.dtype, c.b);
  Func f;
  OPTEST_OK(ch_functions_convolution_2d_new(f.out(), c.W.shape[1], c.W.shape[0], c.kh, c.kw, c.sy,
                                            c.sx, c.ph, c.pw, c.dtype, 1.0, 0.0,
                                            static_cast<int32_t>(c.nobias), W.get(), b.get()));
  return f;
}

class Conv2DRef : public LeakChecked<::testing::TestWithParam<ref_conv2d::Case>> {};

TEST_P(Conv2DRef, Forward) {
  const ref_conv2d::Case& c = GetParam();
  Func f = make_conv(c);
  Array x = make_array(c.dtype, c.x);
  Var y = apply_ok(f, make_var(x));
  EXPECT_TRUE(all_close(data_of(y).get(), c.dtype, c.y, fwd_tol(c.dtype)));
  EXPECT_TRUE(all_close(x.get(), c.dtype, c.x, Tol{0, 0})) << "x changed";
  EXPECT_EQ(creator_name(y), "Convolution2D");
}

// gx, gW, gb against NumPy; a second backward adds to gW and gb (Chainer
// 1.x accumulates parameter gradients until zero_grads) but not to gx.
TEST_P(Conv2DRef, Backward) {
  const ref_conv2d::Case& c = GetParam();
  Func f = make_conv(c);
  Var x = make_var(make_array(c.dtype, c.x));
  Var y = apply_ok(f, x);
  Array gy = make_array(c.dtype, c.gy);
  backward(y, gy);
  EXPECT_TRUE(all_close(grad_of(x).get(), c.dtype, c.gx, bwd_tol(c.dtype)));
  EXPECT_TRUE(all_close(param(f, 0).grad.get(), c.dtype, c.gW, bwd_tol(c.dtype)));
  if (!c.nobias) {
    EXPECT_TRUE(all_close(param(f, 1).grad.get(), c.dtype, c.gb, bwd_tol(c.dtype)));
  }
  backward(y, gy);
  EXPECT_TRUE(all_close(grad_of(x).get(), c.dtype, c.gx, bwd_tol(c.dtype)));
  std::vector<double> gW2(c.gW.data, c.gW.data + c.gW.size);
  for (double& v : gW2) v *= 2;
  EXPECT_TRUE(all_close(param(f, 0).grad.get(), c.dtype, shape_of(c.gW), gW2.data(), c.gW.size,
                        bwd_tol(c.dtype)))
      << "gW after two backward passes";
  EXPECT_TRUE(all_close(gy.get(), c.dtype, c.gy, Tol{0, 0})) << "backward modified gy";
}

TEST_P(Conv2DRef, CheckBackward) {
  const ref_conv2d::Case& c = GetParam();
  Func f = make_conv(c);
  Array x = make_array(c.dtype, c.x), gy = make_array(c.dtype, c.gy);
  ch_array* xs[1] = {x.get()};
  ch_array* gys[1] = {gy.get()};
  const CheckTol t = check_tol(c.dtype);
  EXPECT_EQ(ch_check_backward(f.get(), xs, 1, gys, 1, t.eps, t.atol, t.rtol), CH_OK)
      << ch_error_message();
}

// y is linear in W and b: central differences are exact up to rounding.
TEST_P(Conv2DRef, ParameterGradientsNumerically) {
  const ref_conv2d::Case& c = GetParam();
  Func f = make_conv(c);
  Array x = make_array(c.dtype, c.x), gy = make_array(c.dtype, c.gy);
  const double eps = c.dtype == CH_FLOAT64 ? 1e-3 : 1e-1;
  const Tol tol = c.dtype == CH_FLOAT64 ? Tol{1e-9, 1e-9} : Tol{2e-3, 2e-3};
  EXPECT_TRUE(param_grad_matches(f, x, gy, 0, eps, tol));
  if (!c.nobias) {
    EXPECT_TRUE(param_grad_matches(f, x, gy, 1, eps, tol));
  }
}

INSTANTIATE_TEST_SUITE_P(NumPy, Conv2DRef, ::testing::ValuesIn(ref_conv2d::cases),
                         [](const ::testing::TestParamInfo<ref_conv2d::Case>& i) {
                           return std::string(i.param.name);
                         });

using Conv2DTest = OpTest;

TEST_F(Conv2DTest, ParametersAndInitialisation) {
  for (ch_dtype dt : {CH_FLOAT32, CH_FLOAT64}) {
    SCOPED_TRACE(ch_dtype_name(dt));
    Func f;
    ASSERT_EQ(ch_functions_convolution_2d_new(f.out(), 8, 16, 3, 5, 1, 1, 0, 0, dt, 2.0, 0.25, 0,
                                              nullptr, nullptr),
              CH_OK)
        << ch_error_message();
    ASSERT_EQ(ch_function_parameter_count(f.get()), 2u);
    Param W = param(f, 0), b = param(f, 1);
    EXPECT_EQ(W.name, "W");
    EXPECT_EQ(b.name, "b");
    EXPECT_EQ(shape_of(W.value.get()), (Shape{16, 8, 3, 5}));
    EXPECT_EQ(ch_array_dtype(W.value.get()), dt);
    EXPECT_TRUE(all_equal(b.value, dt, {16}, std::vector<double>(16, 0.25)));
    EXPECT_TRUE(all_equal(W.grad, dt, {16, 8, 3, 5}, std::vector<double>(16 * 8 * 15, 0.0)));
    // W ~ N(0, wscale^2 / (in kh kw)): std 2 / sqrt(120) over 1920 samples
    // (the sample std is within 10% with overwhelming probability).
    std::vector<double> w = values_of(W.value.get());
    double s = 0, s2 = 0;
    for (double v : w) {
      s += v;
      s2 += v * v;
    }
    const double mean = s / w.size(), sd = std::sqrt(s2 / w.size() - mean * mean);
    const double want = 2.0 / std::sqrt(120.0);
    EXPECT_NEAR(sd, want, 0.1 * want);
    EXPECT_NEAR(mean, 0.0, 5 * want / std::sqrt(1920.0));
  }
  Func nb;
  ASSERT_EQ(ch_functions_convolution_2d_new(nb.out(), 1, 2, 3, 3, 1, 1, 0, 0, CH_FLOAT32, 1, 0, 1,
                                            nullptr, nullptr),
            CH_OK);
  ASSERT_EQ(ch_function_parameter_count(nb.get()), 1u);
  EXPECT_EQ(param(nb, 0).name, "W");
}

// Applying one function object twice shares W: both graph nodes add to gW.
TEST_F(Conv2DTest, ApplicationsShareParameters) {
  const ref_conv2d::Case& c = ref_conv2d::cases[0];
  Func f = make_conv(c);
  Var x1 = make_var(make_array(c.dtype, c.x)), x2 = make_var(make_array(c.dtype, c.x));
  Var y1 = apply_ok(f, x1), y2 = apply_ok(f, x2);
  Array gy = make_array(c.dtype, c.gy);
  backward(y1, gy);
  backward(y2, gy);
  std::vector<double> gW2(c.gW.data, c.gW.data + c.gW.size);
  for (double& v : gW2) v *= 2;
  EXPECT_TRUE(all_close(param(f, 0).grad.get(), c.dtype, shape_of(c.gW), gW2.data(), c.gW.size,
                        bwd_tol(c.dtype)));
}

// A batch far larger than one column chunk, with a float32
// input cast from an exact grid, against a direct loop computed here in
// double; gx and gW through sum(y * gy) with gy = 1 against direct loops.
TEST_F(Conv2DTest, LargeBatchMatchesDirectLoop) {
  const int64_t N = 700, C = 2, H = 12, Wd = 11, O = 3, K = 5, OH = H - K + 1, OW = Wd - K + 1;
  std::vector<double> x(static_cast<size_t>(N * C * H * Wd)), w(static_cast<size_t>(O * C * K * K));
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<double>((i * 7919) % 64) / 32.0 - 1.0;
  for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<double>((i * 104729) % 32) / 16.0 - 1.0;
  std::vector<double> b{0.5, -0.25, 1.0};
  std::vector<double> y(static_cast<size_t>(N * O * OH * OW), 0.0), gx(x.size(), 0.0),
      gW(w.size(), 0.0);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t o = 0; o < O; ++o)
      for (int64_t i = 0; i < OH; ++i)
        for (int64_t j = 0; j < OW; ++j) {
          double s = b[static_cast<size_t>(o)];
          for (int64_t c = 0; c < C; ++c)
            for (int64_t ky = 0; ky < K; ++ky)
              for (int64_t kx = 0; kx < K; ++kx) {
                const size_t xi = static_cast<size_t>(((n * C + c) * H + i + ky) * Wd + j + kx);
                const size_t wi = static_cast<size_t>(((o * C + c) * K + ky) * K + kx);
                s += x[xi] * w[wi];
                gx[xi] += w[wi];
                gW[wi] += x[xi];
              }
          y[static_cast<size_t>(((n * O + o) * OH + i) * OW + j)] = s;
        }
  // Each thread works through its own part of the batch and adds its
  // parameter gradients afterwards: 1, 2 and 3 threads (3 parts of 233 or
  // 234 samples) must all agree with the loop.
  const int32_t threads_before = ch_config_num_threads();
  for (int32_t threads : {1, 2, 3})
    for (ch_dtype dt : {CH_FLOAT64, CH_FLOAT32}) {
      SCOPED_TRACE(std::string(ch_dtype_name(dt)) + ", threads " + std::to_string(threads));
      ASSERT_EQ(ch_config_set_num_threads(threads), CH_OK);
      Array W = make_array(dt, {O, C, K, K}, w), B = make_array(dt, {O}, b);
      Func f;
      ASSERT_EQ(ch_functions_convolution_2d_new(f.out(), C, O, K, K, 1, 1, 0, 0, dt, 1, 0, 0,
                                                W.get(), B.get()),
                CH_OK);
      Var vx = make_var(make_array(dt, {N, C, H, Wd}, x));
      Var vy = apply_ok(f, vx);
      // float64: exact (dyadic values, short sums); float32: exact too, every
      // partial sum is a multiple of 2^-9 below 2^14.
      EXPECT_TRUE(all_close(data_of(vy), dt, {N, O, OH, OW}, y, Tol{1e-12, 0}));
      Var s;
      ASSERT_EQ(ch_functions_sum(s.out(), vy.get()), CH_OK);
      backward(s, Array());
      EXPECT_TRUE(all_close(grad_of(vx), dt, {N, C, H, Wd}, gx, Tol{1e-12, 0}));
      EXPECT_TRUE(all_close(param(f, 0).grad, dt, {O, C, K, K}, gW,
                            Tol{1e-9, dt == CH_FLOAT32 ? 1e-6 : 1e-12}));
      EXPECT_TRUE(all_close(param(f, 1).grad, dt, {O}, std::vector<double>(3, double(N * OH * OW)),
                            Tol{0, 0}));
    }
  ASSERT_EQ(ch_config_set_num_threads(threads_before), CH_OK);
}

TEST_F(Conv2DTest, VolatileInputBuildsNoGraph) {
  const ref_conv2d::Case& c = ref_conv2d::cases[0];
  Func f = make_conv(c);
  Var x = make_var(make_array(c.dtype, c.x), true);
  Var y = apply_ok(f, x);
  EXPECT_TRUE(all_close(data_of(y).get(), c.dtype, c.y, fwd_tol(c.dtype)));
  EXPECT_EQ(creator_name(y), "");
  EXPECT_EQ(ch_variable_is_volatile(y.get()), 1);
}

TEST_F(Conv2DTest, BadInputs) {
  Func f;
  ASSERT_EQ(ch_functions_convolution_2d_new(f.out(), 3, 2, 3, 3, 1, 1, 0, 0, CH_FLOAT32, 1, 0, 0,
                                            nullptr, nullptr),
            CH_OK);
  Var y;
  Var rank3 = make_var(iota(CH_FLOAT32, {3, 5, 5}));
  EXPECT_TRUE(
      fails_with(apply_fn(f.get(), rank3.get(), y.out()), CH_ERR_SHAPE, {"4-d", "(3, 5, 5)"}));
  Var chans = make_var(iota(CH_FLOAT32, {1, 4, 5, 5}));
  EXPECT_TRUE(fails_with(apply_fn(f.get(), chans.get(), y.out()), CH_ERR_SHAPE,
                         {"4 channels", "in_channels 3"}));
  Var f64 = make_var(iota(CH_FLOAT64, {1, 3, 5, 5}));
  EXPECT_TRUE(
      fails_with(apply_fn(f.get(), f64.get(), y.out()), CH_ERR_DTYPE, {"float64", "float32"}));
  Var i32 = make_var(iota(CH_INT32, {1, 3, 5, 5}));
  EXPECT_TRUE(fails_with(apply_fn(f.get(), i32.get(), y.out()), CH_ERR_DTYPE, {"int32"}));
  Var tiny = make_var(iota(CH_FLOAT32, {1, 3, 2, 5}));
  EXPECT_TRUE(fails_with(apply_fn(f.get(), tiny.get(), y.out()), CH_ERR_SHAPE, {"3x3", "2x5"}));
  EXPECT_FALSE(y);

  Func g;
  EXPECT_TRUE(fails_with(ch_functions_convolution_2d_new(g.out(), 3, 2, 0, 3, 1, 1, 0, 0,
                                                         CH_FLOAT32, 1, 0, 0, nullptr, nullptr),
                         CH_ERR_INVALID_ARGUMENT, {"ksize (0, 3)"}));
  EXPECT_TRUE(fails_with(ch_functions_convolution_2d_new(g.out(), 3, 2, 3, 3, 1, 0, 0, 0,
                                                         CH_FLOAT32, 1, 0, 0, nullptr, nullptr),
                         CH_ERR_INVALID_ARGUMENT, {"stride (1, 0)"}));
  EXPECT_TRUE(fails_with(ch_functions_convolution_2d_new(g.out(), 3, 2, 3, 3, 1, 1, -1, 0,
                                                         CH_FLOAT32, 1, 0, 0, nullptr, nullptr),
                         CH_ERR_INVALID_ARGUMENT, {"pad (-1, 0)"}));
  EXPECT_TRUE(fails_with(ch_functions_convolution_2d_new(g.out(), 0, 2, 3, 3, 1, 1, 0, 0,
                                                         CH_FLOAT32, 1, 0, 0, nullptr, nullptr),
                         CH_ERR_INVALID_ARGUMENT, {"in_channels 0"}));
  EXPECT_TRUE(fails_with(ch_functions_convolution_2d_new(g.out(), 3, 2, 3, 3, 1, 1, 0, 0, CH_INT32,
                                                         1, 0, 0, nullptr, nullptr),
                         CH_ERR_DTYPE, {"dtype"}));
  Array badW = iota(CH_FLOAT32, {2, 3, 3, 2});
  EXPECT_TRUE(fails_with(ch_functions_convolution_2d_new(g.out(), 3, 2, 3, 3, 1, 1, 0, 0,
                                                         CH_FLOAT32, 1, 0, 0, badW.get(), nullptr),
                         CH_ERR_SHAPE, {"(2, 3, 3, 2)", "(2, 3, 3, 3)"}));
  Array badb = iota(CH_FLOAT32, {3});
  EXPECT_TRUE(fails_with(ch_functions_convolution_2d_new(g.out(), 3, 2, 3, 3, 1, 1, 0, 0,
                                                         CH_FLOAT32, 1, 0, 0, nullptr, badb.get()),
                         CH_ERR_SHAPE, {"(3,)", "(2,)"}));
  EXPECT_FALSE(g);
  EXPECT_TRUE(fails_with(ch_functions_convolution_2d_new(nullptr, 3, 2, 3, 3, 1, 1, 0, 0,
                                                         CH_FLOAT32, 1, 0, 0, nullptr, nullptr),
                         CH_ERR_INVALID_ARGUMENT, {"out"}));
}

}  // namespace
