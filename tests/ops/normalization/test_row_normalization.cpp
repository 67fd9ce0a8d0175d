// layer_normalization and group_normalization against Chainer 7,
// rms_normalization against PyTorch's rms_norm (values and the gradients of
// x, gamma and beta; row_normalization_references.h), gradients against
// central differences (ch_check_backward_graph), second derivatives
// (ch_check_double_backward, float64), and bad arguments (the status and a
// message naming the function and the values).
#include "normalization/row_normalization_references.h"
#include "op_test_util.h"

namespace {

using namespace optest;
using ref_rownorm::Case;

enum { kLayer = 0, kRms = 1, kGroup = 2 };

// The case's function on in[0] = x, in[1] = gamma, in[2] = beta (not rms).
ch_status apply(const Case& c, ch_variable* const* in, ch_variable** out) {
  switch (c.fn) {
    case kLayer:
      return ch_functions_layer_normalization(out, in[0], in[1], in[2], c.eps);
    case kRms:
      return ch_functions_rms_normalization(out, in[0], in[1], c.eps);
    default:
      return ch_functions_group_normalization(out, in[0], static_cast<int32_t>(c.groups), in[1],
                                              in[2], c.eps);
  }
}
const char* node_name(const Case& c) {
  return c.fn == kLayer ? "LayerNormalization"
         : c.fn == kRms ? "RMSNormalization"
                        : "GroupNormalization";
}

class RowNormRef : public LeakChecked<::testing::TestWithParam<Case>> {};

// float32: the references are Chainer's / PyTorch's own float32 results,
// which add in another order.
Tol fwd_tol(ch_dtype dt) { return dt == CH_FLOAT64 ? Tol{1e-13, 1e-13} : Tol{1e-5, 1e-5}; }
Tol bwd_tol(ch_dtype dt) { return dt == CH_FLOAT64 ? Tol{1e-12, 1e-12} : Tol{5e-5, 5e-5}; }

TEST_P(RowNormRef, ForwardAndBackward) {
  const Case& c = GetParam();
  Var x = make_var(make_array(c.dtype, c.x)), gamma = make_var(make_array(c.dtype, c.gamma));
  Var beta = c.fn == kRms ? Var() : make_var(make_array(c.dtype, c.beta));
  ch_variable* in[] = {x.get(), gamma.get(), beta.get()};
  Var y;
  ASSERT_EQ(apply(c, in, y.out()), CH_OK) << ch_error_message();
  EXPECT_EQ(creator_name(y), node_name(c));
  EXPECT_TRUE(all_close(data_of(y).get(), c.dtype, c.y, fwd_tol(c.dtype)));
  backward(y, make_array(c.dtype, c.gy));
  EXPECT_TRUE(all_close(grad_of(x).get(), c.dtype, c.gx, bwd_tol(c.dtype))) << "gx";
  EXPECT_TRUE(all_close(grad_of(gamma).get(), c.dtype, c.ggamma, bwd_tol(c.dtype))) << "ggamma";
  if (c.fn != kRms) {
    EXPECT_TRUE(all_close(grad_of(beta).get(), c.dtype, c.gbeta, bwd_tol(c.dtype))) << "gbeta";
  }
}

// ch_grad of one input at a time: the others get no gradient computed.
TEST_P(RowNormRef, GradOfEachInput) {
  const Case& c = GetParam();
  Var x = make_var(make_array(c.dtype, c.x)), gamma = make_var(make_array(c.dtype, c.gamma));
  Var beta = c.fn == kRms ? Var() : make_var(make_array(c.dtype, c.beta));
  ch_variable* in[] = {x.get(), gamma.get(), beta.get()};
  const ref::Tensor* want[] = {&c.gx, &c.ggamma, &c.gbeta};
  Var y;
  ASSERT_EQ(apply(c, in, y.out()), CH_OK) << ch_error_message();
  Array gy = make_array(c.dtype, c.gy);
  for (int i = 0; i < (c.fn == kRms ? 2 : 3); ++i) {
    for (int dbl = 0; dbl < 2; ++dbl) {
      ch_backward_options o = CH_BACKWARD_OPTIONS_INIT;
      o.enable_double_backprop = dbl;
      Var gyv = make_var(gy), g;
      ch_variable* outs[] = {y.get()};
      ch_variable* gyvs[] = {gyv.get()};
      ASSERT_EQ(ch_grad(g.out(), outs, 1, &in[i], 1, gyvs, &o), CH_OK) << ch_error_message();
      EXPECT_TRUE(all_close(data_of(g).get(), c.dtype, *want[i], bwd_tol(c.dtype)))
          << "input " << i << (dbl ? " (double backprop)" : "");
    }
  }
}

TEST_P(RowNormRef, CheckBackward) {
  const Case& c = GetParam();
  Array x = make_array(c.dtype, c.x), gamma = make_array(c.dtype, c.gamma),
        gy = make_array(c.dtype, c.gy);
  Array beta = c.fn == kRms ? Array() : make_array(c.dtype, c.beta);
  Build build = [&c](ch_variable* const* in, size_t, ch_variable** out) {
    return apply(c, in, out);
  };
  CheckTol t = check_tol(c.dtype);
  if (c.dtype == CH_FLOAT32) t = CheckTol{1e-2, 1e-2, 1e-2};  // normalization amplifies rounding
  std::vector<const Array*> inputs{&x, &gamma};
  if (c.fn != kRms) inputs.push_back(&beta);
  EXPECT_EQ(check_backward(build, inputs, &gy, t), CH_OK) << ch_error_message();
}

ch_status build_case(void* ud, ch_variable* const* in, size_t, ch_variable** out, size_t) {
  return apply(*static_cast<const Case*>(ud), in, out);
}

TEST_P(RowNormRef, DoubleBackward) {
  const Case& c = GetParam();
  if (c.dtype != CH_FLOAT64) GTEST_SKIP() << "check_double_backward runs in float64";
  Array x = make_array(c.dtype, c.x), gamma = make_array(c.dtype, c.gamma),
        gy = make_array(c.dtype, c.gy);
  Array beta = c.fn == kRms ? Array() : make_array(c.dtype, c.beta);
  // The second-order directions: gy's values moved, gamma / beta of their own.
  auto shifted = [&](const ref::Tensor& t, double s) {
    std::vector<double> v(t.data, t.data + t.size);
    for (size_t k = 0; k < v.size(); ++k) v[k] = std::sin(1.3 * static_cast<double>(k) + s);
    return make_array(c.dtype, shape_of(t), v);
  };
  Array ggx = shifted(c.x, 0.5), ggg = shifted(c.gamma, 1.5), ggb = shifted(c.gamma, 2.5);
  const size_t n = c.fn == kRms ? 2 : 3;
  ch_array* xs[] = {x.get(), gamma.get(), beta.get()};
  ch_array* gys[] = {gy.get()};
  ch_array* ggs[] = {ggx.get(), ggg.get(), ggb.get()};
  EXPECT_EQ(ch_check_double_backward(build_case, const_cast<Case*>(&c), xs, n, gys, 1, ggs, n, 1e-4,
                                     1e-6, 1e-5),
            CH_OK)
      << ch_error_message();
}

INSTANTIATE_TEST_SUITE_P(ChainerAndTorch, RowNormRef, ::testing::ValuesIn(ref_rownorm::cases),
                         [](const ::testing::TestParamInfo<Case>& i) {
                           return std::string(i.param.name);
                         });

class RowNormErrors : public LeakChecked<::testing::Test> {};

Var ones(ch_dtype dt, const Shape& s) {
  return make_var(dt, s, std::vector<double>(static_cast<size_t>(size_of(s)), 1.0));
}

TEST_F(RowNormErrors, LayerNormalization) {
  Var x = ones(CH_FLOAT64, {2, 3}), g3 = ones(CH_FLOAT64, {3}), g4 = ones(CH_FLOAT64, {4});
  Var x1 = ones(CH_FLOAT64, {3}), g32 = ones(CH_FLOAT32, {3}), y;
  EXPECT_TRUE(
      fails_with(ch_functions_layer_normalization(y.out(), x.get(), g4.get(), g3.get(), 1e-5),
                 CH_ERR_SHAPE, {"layer_normalization", "gamma", "(4,)", "(2, 3)", "(3,)"}));
  EXPECT_TRUE(
      fails_with(ch_functions_layer_normalization(y.out(), x.get(), g3.get(), g4.get(), 1e-5),
                 CH_ERR_SHAPE, {"layer_normalization", "beta", "(4,)"}));
  EXPECT_TRUE(
      fails_with(ch_functions_layer_normalization(y.out(), x1.get(), g3.get(), g3.get(), 1e-5),
                 CH_ERR_SHAPE, {"layer_normalization", "(3,)"}));
  EXPECT_TRUE(
      fails_with(ch_functions_layer_normalization(y.out(), x.get(), g32.get(), g3.get(), 1e-5),
                 CH_ERR_DTYPE, {"layer_normalization", "gamma", "float32", "float64"}));
  EXPECT_TRUE(fails_with(ch_functions_layer_normalization(y.out(), x.get(), g3.get(), g3.get(), -1),
                         CH_ERR_INVALID_ARGUMENT, {"layer_normalization", "eps", "-1"}));
  EXPECT_TRUE(
      fails_with(ch_functions_layer_normalization(y.out(), x.get(), nullptr, g3.get(), 1e-5),
                 CH_ERR_NULL_HANDLE, {"ch_functions_layer_normalization", "gamma"}));
  EXPECT_EQ(y.get(), nullptr);
}

TEST_F(RowNormErrors, RmsNormalization) {
  Var x = ones(CH_FLOAT32, {2, 3}), g2 = ones(CH_FLOAT32, {2}), g3 = ones(CH_FLOAT32, {3}), y;
  Var x0 = make_var(CH_FLOAT32, {}, {1.0});
  Var xi = make_var(make_array(CH_INT32, {2, 3}, std::vector<double>(6, 1.0)));
  EXPECT_TRUE(fails_with(ch_functions_rms_normalization(y.out(), x.get(), g2.get(), 1e-6),
                         CH_ERR_SHAPE, {"rms_normalization", "gamma", "(2,)", "(3,)"}));
  EXPECT_TRUE(fails_with(ch_functions_rms_normalization(y.out(), x0.get(), g2.get(), 1e-6),
                         CH_ERR_SHAPE, {"rms_normalization", "0-d"}));
  EXPECT_TRUE(fails_with(ch_functions_rms_normalization(y.out(), xi.get(), g2.get(), 1e-6),
                         CH_ERR_DTYPE, {"rms_normalization", "int32"}));
  EXPECT_TRUE(fails_with(ch_functions_rms_normalization(y.out(), x.get(), g3.get(), NAN),
                         CH_ERR_INVALID_ARGUMENT, {"rms_normalization", "eps"}));
}

TEST_F(RowNormErrors, GroupNormalization) {
  Var x = ones(CH_FLOAT64, {2, 6, 2}), g6 = ones(CH_FLOAT64, {6}), g4 = ones(CH_FLOAT64, {4});
  Var x1 = ones(CH_FLOAT64, {6}), y;
  EXPECT_TRUE(
      fails_with(ch_functions_group_normalization(y.out(), x.get(), 4, g6.get(), g6.get(), 1e-5),
                 CH_ERR_INVALID_ARGUMENT, {"group_normalization", "channels 6", "groups 4"}));
  EXPECT_TRUE(
      fails_with(ch_functions_group_normalization(y.out(), x.get(), 0, g6.get(), g6.get(), 1e-5),
                 CH_ERR_INVALID_ARGUMENT, {"group_normalization", "groups 0"}));
  EXPECT_TRUE(
      fails_with(ch_functions_group_normalization(y.out(), x.get(), 2, g4.get(), g6.get(), 1e-5),
                 CH_ERR_SHAPE, {"group_normalization", "gamma", "(4,)", "(6,)"}));
  EXPECT_TRUE(
      fails_with(ch_functions_group_normalization(y.out(), x1.get(), 2, g6.get(), g6.get(), 1e-5),
                 CH_ERR_SHAPE, {"group_normalization", "(6,)"}));
  // A valid call after the failures works.
  EXPECT_EQ(ch_functions_group_normalization(y.out(), x.get(), 3, g6.get(), g6.get(), 1e-5), CH_OK)
      << ch_error_message();
}

}  // namespace

// Sizes past the kernels' row blocks and thread grain: y against a float64
// loop in the test, the array backward (fused kernel) against the graph
// backward (a composition of other kernels) through ch_grad.
namespace {

struct Large {
  int fn;
  Shape x;
  int32_t groups;
};

class RowNormLarge : public LeakChecked<::testing::TestWithParam<Large>> {};

TEST_P(RowNormLarge, KernelsAgreeWithLoopAndGraph) {
  const Large& L = GetParam();
  const int64_t n = size_of(L.x);
  const int64_t C = L.fn == kGroup ? L.x[1] : L.x[L.x.size() - 1];
  std::vector<double> xv(static_cast<size_t>(n)), gv(static_cast<size_t>(C)),
      bv(static_cast<size_t>(C)), gyv(static_cast<size_t>(n));
  for (int64_t k = 0; k < n; ++k) {
    xv[k] = std::sin(0.37 * static_cast<double>(k)) * 2 + 0.1 * static_cast<double>(k % 7);
    gyv[k] = std::cos(0.11 * static_cast<double>(k));
  }
  for (int64_t c = 0; c < C; ++c) {
    gv[c] = 1 + 0.01 * static_cast<double>(c);
    bv[c] = 0.5 - 0.02 * static_cast<double>(c);
  }
  // The expected y in float64: rows of D values, parameter index as the kernel's.
  const int64_t G = L.fn == kGroup ? L.groups : 1;
  const int64_t R = L.fn == kGroup ? n / (L.x[0] * C) : 1;
  const int64_t D = C / G * R, rows = n / D;
  std::vector<double> want(static_cast<size_t>(n));
  for (int64_t i = 0; i < rows; ++i) {
    double mean = 0, var = 0;
    for (int64_t j = 0; j < D; ++j) mean += xv[i * D + j];
    mean = L.fn == kRms ? 0 : mean / static_cast<double>(D);
    for (int64_t j = 0; j < D; ++j) var += (xv[i * D + j] - mean) * (xv[i * D + j] - mean);
    const double inv = 1 / std::sqrt(var / static_cast<double>(D) + 1e-5);
    for (int64_t j = 0; j < D; ++j) {
      const int64_t q = (i % G) * (D / R) + j / R;
      want[i * D + j] = (xv[i * D + j] - mean) * inv * gv[q] + (L.fn == kRms ? 0 : bv[q]);
    }
  }
  const Case c{"large", CH_FLOAT64, {}, {}, {}, {}, {}, {}, {}, {}, L.fn, L.groups, 1e-5};
  Var x = make_var(CH_FLOAT64, L.x, xv), gamma = make_var(CH_FLOAT64, {C}, gv);
  Var beta = L.fn == kRms ? Var() : make_var(CH_FLOAT64, {C}, bv);
  ch_variable* in[] = {x.get(), gamma.get(), beta.get()};
  Var y;
  ASSERT_EQ(apply(c, in, y.out()), CH_OK) << ch_error_message();
  EXPECT_TRUE(all_close(data_of(y), CH_FLOAT64, L.x, want, Tol{1e-12, 1e-12}));
  const size_t ni = L.fn == kRms ? 2 : 3;
  Var grads[2][3];
  for (int dbl = 0; dbl < 2; ++dbl) {
    ch_backward_options o = CH_BACKWARD_OPTIONS_INIT;
    o.enable_double_backprop = dbl;
    Var gy = make_var(CH_FLOAT64, L.x, gyv);
    ch_variable* outs[] = {y.get()};
    ch_variable* gys[] = {gy.get()};
    ch_variable* g[3] = {nullptr, nullptr, nullptr};
    ASSERT_EQ(ch_grad(g, outs, 1, in, ni, gys, &o), CH_OK) << ch_error_message();
    for (size_t i = 0; i < ni; ++i) grads[dbl][i] = Var(g[i]);
  }
  for (size_t i = 0; i < ni; ++i) {
    std::vector<double> graph = values_of(grads[1][i]);
    EXPECT_TRUE(all_close(data_of(grads[0][i]), CH_FLOAT64, shape_of(grads[1][i]), graph,
                          Tol{1e-10, 1e-10}))
        << "input " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Sizes, RowNormLarge,
                         ::testing::Values(Large{kLayer, {3, 67, 130}, 0},
                                           Large{kRms, {257, 96}, 0},
                                           Large{kGroup, {6, 32, 9, 9}, 8},
                                           Large{kGroup, {70, 12, 5}, 3}));

}  // namespace
