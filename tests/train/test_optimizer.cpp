// ch_optimizer: the built-in update rules against NumPy references of
// Chainer 1.0.1's formulas and Chainer 7's Adam (AdamW, AMSGrad) and
// NesterovAG (cross-checked with Chainer itself, see
// make_optimizer_references.py), hyperparameters and defaults, gradient
// utilities, user-defined optimizers through callbacks, and misuse.
#include <cmath>
#include <cstring>

#include "optimizer_references.h"
#include "train_test_util.h"

using namespace train_test;

namespace {

class OptimizerTest : public CapiTest {};

Opt make_optimizer(const optimizer_refs::Case& c) {
  Opt o;
  const double* a = c.args;
  std::string k = c.kind;
  ch_status st = CH_ERR_INTERNAL;
  if (k == "SGD") st = ch_optimizer_sgd_new(o.out(), a[0]);
  if (k == "MomentumSGD") st = ch_optimizer_momentum_sgd_new(o.out(), a[0], a[1]);
  if (k == "AdaGrad") st = ch_optimizer_adagrad_new(o.out(), a[0], a[1]);
  if (k == "AdaDelta") st = ch_optimizer_adadelta_new(o.out(), a[0], a[1]);
  if (k == "Adam") st = ch_optimizer_adam_new(o.out(), a[0], a[1], a[2], a[3], a[4]);
  if (k == "RMSprop") st = ch_optimizer_rmsprop_new(o.out(), a[0], a[1], a[2]);
  if (k == "NesterovAG") st = ch_optimizer_nesterov_ag_new(o.out(), a[0], a[1]);
  if (k == "AdamEx") {
    ch_adam_options opts = CH_ADAM_OPTIONS_INIT;
    opts.alpha = a[0];
    opts.beta1 = a[1];
    opts.beta2 = a[2];
    opts.eps = a[3];
    opts.eta = a[4];
    opts.weight_decay_rate = a[5];
    opts.amsgrad = static_cast<int32_t>(a[6]);
    opts.lam = a[7];
    st = ch_optimizer_adam_new_ex(o.out(), &opts);
  }
  EXPECT_EQ(st, CH_OK) << c.label << ": " << ch_error_message();
  return o;
}

std::vector<double> vec(const double* p, size_t n) { return std::vector<double>(p, p + n); }

void run_reference_case(const optimizer_refs::Case& c, ch_dtype dtype, double rtol, double atol) {
  using namespace optimizer_refs;
  SCOPED_TRACE(std::string(c.label) + (dtype == CH_FLOAT32 ? " float32" : " float64"));
  Arr W = make_array(dtype, {3, 4}, vec(kInitW, 12));
  Arr b = make_array(dtype, {3}, vec(kInitB, 3));
  Arr gW = full(dtype, {3, 4}, 0.0);
  Arr gb = full(dtype, {3}, 0.0);
  Opt o = make_optimizer(c);
  EXPECT_STREQ(ch_optimizer_name(o), c.name);
  ch_array* params[] = {W, b};
  ch_array* grads[] = {gW, gb};
  ASSERT_CH_OK(ch_optimizer_setup_arrays(o, params, grads, 2));
  EXPECT_EQ(ch_optimizer_t(o), 0);
  for (int t = 0; t < kSteps; ++t) {
    Arr sw = make_array(dtype, {3, 4}, vec(kGradW[t], 12));
    Arr sb = make_array(dtype, {3}, vec(kGradB[t], 3));
    ASSERT_CH_OK(ch_array_write(gW, ch_array_data(sw), ch_array_nbytes(sw)));
    ASSERT_CH_OK(ch_array_write(gb, ch_array_data(sb), ch_array_nbytes(sb)));
    ASSERT_CH_OK(ch_optimizer_update(o));
    EXPECT_EQ(ch_optimizer_t(o), t + 1);
    EXPECT_TRUE(AllClose(values(W), vec(c.after_w[t], 12), atol, rtol)) << "step " << t + 1;
    EXPECT_TRUE(AllClose(values(b), vec(c.after_b[t], 3), atol, rtol)) << "step " << t + 1;
  }
  ASSERT_EQ(ch_optimizer_state_count(o), static_cast<size_t>(2 * c.n_states));
  for (int s = 0; s < c.n_states; ++s) {
    Arr state;
    const char* key = nullptr;
    ASSERT_CH_OK(ch_optimizer_state(state.out(), &key, o, static_cast<size_t>(s)));
    EXPECT_EQ(std::string(key), std::string("0/") + c.state_names[s]);
    EXPECT_TRUE(AllClose(values(state), vec(c.state_w[s], 12), atol, rtol)) << key;
    ASSERT_CH_OK(ch_optimizer_state(state.out(), &key, o, static_cast<size_t>(c.n_states + s)));
    EXPECT_EQ(std::string(key), std::string("1/") + c.state_names[s]);
    EXPECT_TRUE(AllClose(values(state), vec(c.state_b[s], 3), atol, rtol)) << key;
  }
}

TEST_F(OptimizerTest, UpdateRulesMatchReferencesFloat64) {
  for (const auto& c : optimizer_refs::kCases) run_reference_case(c, CH_FLOAT64, 1e-12, 1e-13);
}

TEST_F(OptimizerTest, UpdateRulesMatchReferencesFloat32) {
  for (const auto& c : optimizer_refs::kCases) run_reference_case(c, CH_FLOAT32, 2e-5, 2e-5);
}

TEST_F(OptimizerTest, DefaultsAreTheSeeds) {
  struct {
    const char* kind;
    const char* name;
    double expected;
  } cases[] = {
      {"SGD", "lr", 0.01},       {"MomentumSGD", "lr", 0.01}, {"MomentumSGD", "momentum", 0.9},
      {"AdaGrad", "lr", 0.001},  {"AdaGrad", "eps", 1e-8},    {"AdaDelta", "rho", 0.95},
      {"AdaDelta", "eps", 1e-6}, {"Adam", "alpha", 0.001},    {"Adam", "beta1", 0.9},
      {"Adam", "beta2", 0.999},  {"Adam", "lam", 0.99999999}, {"Adam", "eps", 1e-8},
      {"RMSprop", "lr", 0.01},   {"RMSprop", "alpha", 0.99},  {"RMSprop", "eps", 1e-8},
  };
  for (const auto& c : cases) {
    Opt o;
    std::string k = c.kind;
    if (k == "SGD") ASSERT_CH_OK(ch_optimizer_sgd_new(o.out(), CH_SGD_DEFAULT_LR));
    if (k == "MomentumSGD")
      ASSERT_CH_OK(ch_optimizer_momentum_sgd_new(o.out(), CH_MOMENTUM_SGD_DEFAULT_LR,
                                                 CH_MOMENTUM_SGD_DEFAULT_MOMENTUM));
    if (k == "AdaGrad")
      ASSERT_CH_OK(
          ch_optimizer_adagrad_new(o.out(), CH_ADAGRAD_DEFAULT_LR, CH_ADAGRAD_DEFAULT_EPS));
    if (k == "AdaDelta")
      ASSERT_CH_OK(
          ch_optimizer_adadelta_new(o.out(), CH_ADADELTA_DEFAULT_RHO, CH_ADADELTA_DEFAULT_EPS));
    if (k == "Adam")
      ASSERT_CH_OK(ch_optimizer_adam_new(o.out(), CH_ADAM_DEFAULT_ALPHA, CH_ADAM_DEFAULT_BETA1,
                                         CH_ADAM_DEFAULT_BETA2, CH_ADAM_DEFAULT_LAM,
                                         CH_ADAM_DEFAULT_EPS));
    if (k == "RMSprop")
      ASSERT_CH_OK(ch_optimizer_rmsprop_new(o.out(), CH_RMSPROP_DEFAULT_LR,
                                            CH_RMSPROP_DEFAULT_ALPHA, CH_RMSPROP_DEFAULT_EPS));
    double v = -1;
    ASSERT_CH_OK(ch_optimizer_get_hyperparam(&v, o, c.name));
    EXPECT_EQ(v, c.expected) << c.kind << "." << c.name;
  }
}

TEST_F(OptimizerTest, Hyperparameters) {
  Opt o;
  ASSERT_CH_OK(ch_optimizer_momentum_sgd_new(o.out(), 0.1, 0.5));
  ASSERT_CH_OK(ch_optimizer_set_hyperparam(o, "lr", 0.05));
  double v = 0;
  ASSERT_CH_OK(ch_optimizer_get_hyperparam(&v, o, "lr"));
  EXPECT_EQ(v, 0.05);
  EXPECT_CH_ERR(CH_ERR_INVALID_ARGUMENT, ch_optimizer_get_hyperparam(&v, o, "beta1"));
  EXPECT_TRUE(contains(ch_error_message(), "lr, momentum")) << ch_error_message();
  EXPECT_CH_ERR(CH_ERR_INVALID_ARGUMENT, ch_optimizer_set_hyperparam(o, "momentum", 1.0));
  EXPECT_TRUE(contains(ch_error_message(), "[0, 1)")) << ch_error_message();
  EXPECT_CH_ERR(CH_ERR_INVALID_ARGUMENT, ch_optimizer_set_hyperparam(o, "lr", -1.0));
  EXPECT_CH_ERR(CH_ERR_INVALID_ARGUMENT, ch_optimizer_set_hyperparam(o, "lr", NAN));
  EXPECT_CH_ERR(CH_ERR_INVALID_ARGUMENT, ch_optimizer_get_hyperparam(nullptr, o, "lr"));
  EXPECT_CH_ERR(CH_ERR_INVALID_ARGUMENT, ch_optimizer_get_hyperparam(&v, o, nullptr));
  ASSERT_CH_OK(ch_optimizer_get_hyperparam(&v, o, "lr"));
  EXPECT_EQ(v, 0.05);  // failed sets changed nothing

  // Adam's lr is the bias-corrected step, read-only, undefined at t = 0.
  Opt adam;
  ASSERT_CH_OK(ch_optimizer_adam_new(adam.out(), 0.001, 0.9, 0.999, 1.0, 1e-8));
  EXPECT_CH_ERR(CH_ERR_INVALID_ARGUMENT, ch_optimizer_get_hyperparam(&v, adam, "lr"));
  ASSERT_CH_OK(ch_optimizer_set_t(adam, 3));
  ASSERT_CH_OK(ch_optimizer_get_hyperparam(&v, adam, "lr"));
  EXPECT_NEAR(v, 0.001 * std::sqrt(1 - std::pow(0.999, 3)) / (1 - std::pow(0.9, 3)), 1e-18);
  EXPECT_CH_ERR(CH_ERR_INVALID_ARGUMENT, ch_optimizer_set_hyperparam(adam, "lr", 0.1));
  EXPECT_TRUE(contains(ch_error_message(), "alpha")) << ch_error_message();
  EXPECT_CH_ERR(CH_ERR_INVALID_ARGUMENT, ch_optimizer_set_t(adam, -1));
  // Chainer 7's terms are hyperparameters of every Adam; amsgrad is read-only.
  ASSERT_CH_OK(ch_optimizer_get_hyperparam(&v, adam, "weight_decay_rate"));
  EXPECT_EQ(v, 0.0);
  ASSERT_CH_OK(ch_optimizer_set_hyperparam(adam, "eta", 0.5));
  ASSERT_CH_OK(ch_optimizer_get_hyperparam(&v, adam, "eta"));
  EXPECT_EQ(v, 0.5);
  ASSERT_CH_OK(ch_optimizer_get_hyperparam(&v, adam, "amsgrad"));
  EXPECT_EQ(v, 0.0);
  EXPECT_CH_ERR(CH_ERR_INVALID_ARGUMENT, ch_optimizer_set_hyperparam(adam, "amsgrad", 1));
  EXPECT_TRUE(contains(ch_error_message(), "state arrays")) << ch_error_message();
  EXPECT_CH_ERR(CH_ERR_INVALID_ARGUMENT,
                ch_optimizer_set_hyperparam(adam, "weight_decay_rate", -1));
}

TEST_F(OptimizerTest, AdamOptionsDefaultsAreChainer7s) {
  // NULL options are CH_ADAM_OPTIONS_INIT: Chainer 7's Adam() (lam = 1, no weight decay).
  Opt o;
  ASSERT_CH_OK(ch_optimizer_adam_new_ex(o.out(), nullptr));
  EXPECT_STREQ(ch_optimizer_name(o), "Adam");
  const struct {
    const char* name;
    double expected;
  } cases[] = {{"alpha", 0.001}, {"beta1", 0.9}, {"beta2", 0.999},
               {"eps", 1e-8},    {"eta", 1.0},   {"weight_decay_rate", 0.0},
               {"lam", 1.0}};
  for (const auto& c : cases) {
    double v = -1;
    ASSERT_CH_OK(ch_optimizer_get_hyperparam(&v, o, c.name));
    EXPECT_EQ(v, c.expected) << c.name;
  }
  Opt n;
  ASSERT_CH_OK(ch_optimizer_nesterov_ag_new(n.out(), CH_NESTEROV_AG_DEFAULT_LR,
                                            CH_NESTEROV_AG_DEFAULT_MOMENTUM));
  EXPECT_STREQ(ch_optimizer_name(n), "NesterovAG");
  double v = 0;
  ASSERT_CH_OK(ch_optimizer_get_hyperparam(&v, n, "momentum"));
  EXPECT_EQ(v, 0.9);
}

TEST_F(OptimizerTest, AdamOptionsAreChecked) {
  Opt o;
  ch_adam_options opts = CH_ADAM_OPTIONS_INIT;
  opts.version = 2;
  EXPECT_CH_ERR(CH_ERR_INVALID_ARGUMENT, ch_optimizer_adam_new_ex(o.out(), &opts));
  EXPECT_TRUE(contains(ch_error_message(), "ch_adam_options version 2")) << ch_error_message();
  opts.version = 0;
  EXPECT_CH_ERR(CH_ERR_INVALID_ARGUMENT, ch_optimizer_adam_new_ex(o.out(), &opts));
  opts = ch_adam_options CH_ADAM_OPTIONS_INIT;
  opts.amsgrad = 2;
  EXPECT_CH_ERR(CH_ERR_INVALID_ARGUMENT, ch_optimizer_adam_new_ex(o.out(), &opts));
  EXPECT_TRUE(contains(ch_error_message(), "amsgrad is 2")) << ch_error_message();
  opts = ch_adam_options CH_ADAM_OPTIONS_INIT;
  opts.weight_decay_rate = -0.1;
  EXPECT_CH_ERR(CH_ERR_INVALID_ARGUMENT, ch_optimizer_adam_new_ex(o.out(), &opts));
  EXPECT_TRUE(contains(ch_error_message(), "weight_decay_rate is -0.1")) << ch_error_message();
  opts = ch_adam_options CH_ADAM_OPTIONS_INIT;
  opts.beta2 = 1.0;
  EXPECT_CH_ERR(CH_ERR_INVALID_ARGUMENT, ch_optimizer_adam_new_ex(o.out(), &opts));
  EXPECT_CH_ERR(CH_ERR_INVALID_ARGUMENT, ch_optimizer_adam_new_ex(nullptr, nullptr));
  EXPECT_CH_ERR(CH_ERR_INVALID_ARGUMENT, ch_optimizer_nesterov_ag_new(o.out(), 0.01, 1.0));
  EXPECT_EQ(o.get(), nullptr);
}

TEST_F(OptimizerTest, ConstructorsRejectBadHyperparameters) {
  Opt o;
  EXPECT_CH_ERR(CH_ERR_INVALID_ARGUMENT, ch_optimizer_sgd_new(o.out(), -0.1));
  EXPECT_TRUE(contains(ch_error_message(), "lr is -0.1")) << ch_error_message();
  EXPECT_EQ(o.get(), nullptr);
  EXPECT_CH_ERR(CH_ERR_INVALID_ARGUMENT, ch_optimizer_momentum_sgd_new(o.out(), 0.1, 1.5));
  EXPECT_CH_ERR(CH_ERR_INVALID_ARGUMENT, ch_optimizer_adagrad_new(o.out(), 0.1, -1e-8));
  EXPECT_CH_ERR(CH_ERR_INVALID_ARGUMENT, ch_optimizer_adadelta_new(o.out(), 1.0, 1e-6));
  EXPECT_CH_ERR(CH_ERR_INVALID_ARGUMENT,
                ch_optimizer_adam_new(o.out(), 0.001, 0.9, 0.999, 0.0, 1e-8));
  EXPECT_CH_ERR(CH_ERR_INVALID_ARGUMENT,
                ch_optimizer_adam_new(o.out(), INFINITY, 0.9, 0.999, 1, 1e-8));
  EXPECT_CH_ERR(CH_ERR_INVALID_ARGUMENT, ch_optimizer_rmsprop_new(o.out(), 0.01, -0.5, 1e-8));
  EXPECT_CH_ERR(CH_ERR_INVALID_ARGUMENT, ch_optimizer_sgd_new(nullptr, 0.1));
}

TEST_F(OptimizerTest, SetupFromFunctionSetUsesPathsAndSharesArrays) {
  FnSet model;
  ASSERT_CH_OK(ch_function_set_new(model.out()));
  Fn l2 = make_linear(CH_FLOAT32, 3, 2);
  Fn l1 = make_linear(CH_FLOAT32, 4, 3);
  ASSERT_CH_OK(ch_function_set_add_function(model, "l2", l2));
  ASSERT_CH_OK(ch_function_set_add_function(model, "l1", l1));
  Opt o;
  ASSERT_CH_OK(ch_optimizer_adam_new(o.out(), 0.001, 0.9, 0.999, 1 - 1e-8, 1e-8));
  ASSERT_CH_OK(ch_optimizer_setup(o, model));
  ASSERT_EQ(ch_optimizer_parameter_count(o), 4u);
  const char* path = nullptr;
  Arr p, g;
  ASSERT_CH_OK(ch_optimizer_parameter(p.out(), g.out(), &path, o, 1));
  EXPECT_STREQ(path, "l1/b");
  std::vector<std::string> keys;
  for (size_t i = 0; i < ch_optimizer_state_count(o); ++i) {
    const char* key = nullptr;
    ASSERT_CH_OK(ch_optimizer_state(nullptr, &key, o, i));
    keys.push_back(key);
  }
  EXPECT_EQ(keys, (std::vector<std::string>{"l1/W/m", "l1/W/v", "l1/b/m", "l1/b/v", "l2/W/m",
                                            "l2/W/v", "l2/b/m", "l2/b/v"}));
  EXPECT_CH_ERR(CH_ERR_INVALID_ARGUMENT, ch_optimizer_state(nullptr, nullptr, o, 8));
  // The optimizer updates the function's own arrays.
  Arr fb, fgb;
  ASSERT_CH_OK(ch_function_parameter(fb.out(), fgb.out(), nullptr, l1, 1));
  ASSERT_CH_OK(ch_array_fill(fgb, 1.0));
  std::vector<double> before = values(fb);
  ASSERT_CH_OK(ch_optimizer_update(o));
  std::vector<double> after = values(fb);
  for (size_t i = 0; i < after.size(); ++i) EXPECT_NEAR(after[i], before[i] - 0.001, 1e-6);
}

TEST_F(OptimizerTest, ZeroGradsWeightDecayNormClipAccumulate) {
  Arr W = f64({2, 2}, {1, 2, 3, 4});
  Arr gW = f64({2, 2}, {3, 0, 0, 4});
  Arr b = f64({1}, {10});
  Arr gb = f64({1}, {0});
  ch_array* params[] = {W, b};
  ch_array* grads[] = {gW, gb};
  Opt o;
  ASSERT_CH_OK(ch_optimizer_sgd_new(o.out(), 0.1));
  ASSERT_CH_OK(ch_optimizer_setup_arrays(o, params, grads, 2));
  double norm = 0;
  ASSERT_CH_OK(ch_optimizer_compute_grads_norm(&norm, o));
  EXPECT_DOUBLE_EQ(norm, 5.0);
  ASSERT_CH_OK(ch_optimizer_clip_grads(o, 10.0));  // below the threshold: unchanged
  EXPECT_TRUE(AllClose(values(gW), {3, 0, 0, 4}));
  ASSERT_CH_OK(ch_optimizer_clip_grads(o, 1.0));
  EXPECT_TRUE(AllClose(values(gW), {0.6, 0, 0, 0.8}, 1e-15));
  ASSERT_CH_OK(ch_optimizer_compute_grads_norm(&norm, o));
  EXPECT_NEAR(norm, 1.0, 1e-15);
  EXPECT_CH_ERR(CH_ERR_INVALID_ARGUMENT, ch_optimizer_clip_grads(o, -1.0));
  ASSERT_CH_OK(ch_optimizer_weight_decay(o, 0.5));
  EXPECT_TRUE(AllClose(values(gW), {1.1, 1, 1.5, 2.8}, 1e-15));
  EXPECT_TRUE(AllClose(values(gb), {5}));
  Arr more_w = f64({2, 2}, {1, 1, 1, 1});
  Arr more_b = f64({1}, {2});
  ch_array* more[] = {more_w, more_b};
  ASSERT_CH_OK(ch_optimizer_accumulate_grads(o, more, 2));
  EXPECT_TRUE(AllClose(values(gW), {2.1, 2, 2.5, 3.8}, 1e-15));
  EXPECT_TRUE(AllClose(values(gb), {7}));
  // Mismatches are checked before anything is added.
  Arr wrong = f64({2}, {1, 1});
  ch_array* bad[] = {more_w, wrong};
  EXPECT_CH_ERR(CH_ERR_SHAPE, ch_optimizer_accumulate_grads(o, bad, 2));
  EXPECT_TRUE(contains(ch_error_message(), "grads[1]")) << ch_error_message();
  EXPECT_TRUE(AllClose(values(gW), {2.1, 2, 2.5, 3.8}, 1e-15));
  EXPECT_CH_ERR(CH_ERR_INVALID_ARGUMENT, ch_optimizer_accumulate_grads(o, more, 1));
  ASSERT_CH_OK(ch_optimizer_update(o));
  EXPECT_TRUE(AllClose(values(W), {1 - 0.21, 2 - 0.2, 3 - 0.25, 4 - 0.38}, 1e-14));
  ASSERT_CH_OK(ch_optimizer_zero_grads(o));
  EXPECT_TRUE(AllClose(values(gW), {0, 0, 0, 0}));
  EXPECT_TRUE(AllClose(values(gb), {0}));
}

// zero_grads marks an engine-held CPU gradient zero and writes it at its first
// use (lazy zeroing; test_lazy_zero.cpp checks it inside): through the C API
// every read sees zeros, and a gradient whose ch_array_data pointer was taken
// is zeroed at once, so that the pointer shows the zeros too.
TEST_F(OptimizerTest, ZeroGradsReadsAsZerosThroughTheApi) {
  const int64_t n = 100000;
  Arr W = full(CH_FLOAT32, {n}, 1.0);
  Arr b = full(CH_FLOAT32, {n}, 1.0);
  Arr gW = full(CH_FLOAT32, {n}, 3.0);  // never handed out: zeroed lazily
  Arr gb = full(CH_FLOAT32, {n}, 3.0);
  float* held = static_cast<float*>(ch_array_data(gb));  // handed out: zeroed at once
  Opt o;
  ASSERT_CH_OK(ch_optimizer_sgd_new(o.out(), 0.5));
  ch_array* params[] = {W, b};
  ch_array* grads[] = {gW, gb};
  ASSERT_CH_OK(ch_optimizer_setup_arrays(o, params, grads, 2));
  ASSERT_CH_OK(ch_optimizer_zero_grads(o));
  for (int64_t i = 0; i < n; i += 997) ASSERT_EQ(held[i], 0.0f) << i;
  double norm = -1;
  ASSERT_CH_OK(ch_optimizer_compute_grads_norm(&norm, o));
  EXPECT_EQ(norm, 0.0);
  std::vector<float> read(n, 9.0f);
  ASSERT_CH_OK(ch_array_read(gW, read.data(), read.size() * sizeof(float)));
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(read[i], 0.0f) << i;
  ASSERT_CH_OK(ch_optimizer_zero_grads(o));
  ASSERT_CH_OK(ch_optimizer_update(o));  // no gradient: nothing moves
  EXPECT_EQ(values(W)[n - 1], 1.0);
  EXPECT_EQ(values(gW)[n - 1], 0.0);
  // Added after zero_grads: 0 + 2, not 3 + 2.
  ASSERT_CH_OK(ch_optimizer_zero_grads(o));
  Arr two = full(CH_FLOAT32, {n}, 2.0);
  ch_array* more[] = {two, two};
  ASSERT_CH_OK(ch_optimizer_accumulate_grads(o, more, 2));
  EXPECT_EQ(values(gW)[0], 2.0);
  EXPECT_EQ(held[n - 1], 2.0f);
  ASSERT_CH_OK(ch_optimizer_update(o));
  EXPECT_EQ(values(W)[0], 0.0);  // 1 - 0.5 * 2
  // A pointer taken while the gradient is marked sees zeros.
  ASSERT_CH_OK(ch_optimizer_zero_grads(o));
  const float* late = static_cast<const float*>(ch_array_data(gW));
  for (int64_t i = 0; i < n; i += 997) ASSERT_EQ(late[i], 0.0f) << i;
}

TEST_F(OptimizerTest, LargeParametersUseTheParallelPath) {
  const int64_t n = 300001;
  std::vector<double> p(n), g(n);
  for (int64_t i = 0; i < n; ++i) {
    p[i] = std::sin(0.001 * static_cast<double>(i));
    g[i] = std::cos(0.003 * static_cast<double>(i));
  }
  Arr P = f32({n}, p);
  Arr G = f32({n}, g);
  ch_array* params[] = {P};
  ch_array* grads[] = {G};
  Opt o;
  ASSERT_CH_OK(ch_optimizer_rmsprop_new(o.out(), 0.01, 0.99, 1e-8));
  ASSERT_CH_OK(ch_optimizer_setup_arrays(o, params, grads, 1));
  ASSERT_CH_OK(ch_optimizer_update(o));
  std::vector<double> want(n);
  for (int64_t i = 0; i < n; ++i) {
    double gi = static_cast<float>(g[i]);
    double ms = 0.01 * gi * gi;
    want[i] = static_cast<float>(p[i]) - 0.01 * gi / (std::sqrt(ms) + 1e-8);
  }
  EXPECT_TRUE(AllClose(values(P), want, 1e-5, 1e-5));
  double norm = 0, want_norm = 0;
  for (int64_t i = 0; i < n; ++i) {
    double gi = static_cast<float>(g[i]);
    want_norm += gi * gi;
  }
  ASSERT_CH_OK(ch_optimizer_compute_grads_norm(&norm, o));
  EXPECT_NEAR(norm, std::sqrt(want_norm), 1e-9 * std::sqrt(want_norm));
}

TEST_F(OptimizerTest, Misuse) {
  Opt o;
  ASSERT_CH_OK(ch_optimizer_sgd_new(o.out(), 0.1));
  EXPECT_CH_ERR(CH_ERR_INVALID_ARGUMENT, ch_optimizer_update(o));
  EXPECT_TRUE(contains(ch_error_message(), "not set up")) << ch_error_message();
  EXPECT_EQ(ch_optimizer_t(o), 0);
  EXPECT_CH_ERR(CH_ERR_NULL_HANDLE, ch_optimizer_update(nullptr));
  EXPECT_CH_ERR(CH_ERR_NULL_HANDLE, ch_optimizer_setup(o, nullptr));
  Arr W = f32({2}, {1, 2});
  Arr g64 = f64({2}, {1, 2});
  Arr g3 = f32({3}, {1, 2, 3});
  Arr i32 = make_array(CH_INT32, {2}, {1, 2});
  ch_array* p1[] = {W};
  ch_array* gbad[] = {g64};
  // A gradient of another dtype is a dtype error (issue 48), of another shape a shape error.
  EXPECT_CH_ERR(CH_ERR_DTYPE, ch_optimizer_setup_arrays(o, p1, gbad, 1));
  EXPECT_TRUE(contains(ch_error_message(), "parameter '0'")) << ch_error_message();
  ch_array* g3s[] = {g3};
  EXPECT_CH_ERR(CH_ERR_SHAPE, ch_optimizer_setup_arrays(o, p1, g3s, 1));
  ch_array* pi[] = {i32};
  EXPECT_CH_ERR(CH_ERR_DTYPE, ch_optimizer_setup_arrays(o, pi, pi, 1));
  EXPECT_CH_ERR(CH_ERR_INVALID_ARGUMENT, ch_optimizer_setup_arrays(o, nullptr, p1, 1));
  EXPECT_EQ(ch_optimizer_parameter_count(o), 0u);  // failed setups changed nothing
  // Wrong kinds and released handles.
  EXPECT_CH_ERR(CH_ERR_RELEASED_HANDLE,
                ch_optimizer_update(reinterpret_cast<ch_optimizer*>(W.get())));
  EXPECT_STREQ(ch_optimizer_name(reinterpret_cast<ch_optimizer*>(W.get())), "");
  ch_optimizer* raw = nullptr;
  ASSERT_CH_OK(ch_optimizer_sgd_new(&raw, 0.1));
  EXPECT_EQ(ch_optimizer_retain(raw), raw);
  ASSERT_CH_OK(ch_optimizer_release(raw));
  ASSERT_CH_OK(ch_optimizer_release(raw));
  EXPECT_CH_ERR(CH_ERR_RELEASED_HANDLE, ch_optimizer_release(raw));
  EXPECT_CH_ERR(CH_ERR_RELEASED_HANDLE, ch_optimizer_zero_grads(raw));
  EXPECT_EQ(ch_optimizer_t(raw), 0);
  EXPECT_CH_OK(ch_optimizer_release(nullptr));
}

TEST_F(OptimizerTest, ResetupResetsTAndState) {
  Arr W = f32({2}, {1, 2});
  Arr G = f32({2}, {1, 1});
  ch_array* p[] = {W};
  ch_array* g[] = {G};
  Opt o;
  ASSERT_CH_OK(ch_optimizer_momentum_sgd_new(o.out(), 0.1, 0.9));
  ASSERT_CH_OK(ch_optimizer_setup_arrays(o, p, g, 1));
  ASSERT_CH_OK(ch_optimizer_update(o));
  ASSERT_CH_OK(ch_optimizer_update(o));
  EXPECT_EQ(ch_optimizer_t(o), 2);
  ASSERT_CH_OK(ch_optimizer_setup_arrays(o, p, g, 1));
  EXPECT_EQ(ch_optimizer_t(o), 0);
  Arr v;
  ASSERT_CH_OK(ch_optimizer_state(v.out(), nullptr, o, 0));
  EXPECT_TRUE(AllClose(values(v), {0, 0}));
}

// ---- user-defined optimizers ----------------------------------------------------

struct UserState {
  int init_calls = 0;
  int update_calls = 0;
  int destroyed = 0;
  int64_t last_t = 0;
  double lr = 0.5;
  bool fail_update = false;
  bool fail_init = false;
  bool return_null_state = false;
};

// State "n": a per-parameter step counter (shape ()), "acc": a gradient sum.
ch_status user_init(void* ud, ch_array* param, ch_array*, ch_array** states, size_t n_states) {
  auto* u = static_cast<UserState*>(ud);
  ++u->init_calls;
  if (u->fail_init) {
    ch_error_set(CH_ERR_INVALID_ARGUMENT, "init refused");
    return CH_ERR_INVALID_ARGUMENT;
  }
  if (n_states != 2) return CH_ERR_INTERNAL;
  ch_status st = ch_array_new_full(&states[0], CH_FLOAT64, nullptr, 0, 0.0, ch_device_cpu());
  if (st != CH_OK) return st;
  if (u->return_null_state) return CH_OK;
  return ch_array_new_full(&states[1], ch_array_dtype(param), ch_array_shape(param),
                           ch_array_ndim(param), 0.0, ch_device_cpu());
}

ch_status user_update(void* ud, ch_array* param, ch_array* grad, ch_array* const* states,
                      size_t n_states, int64_t t) {
  auto* u = static_cast<UserState*>(ud);
  ++u->update_calls;
  u->last_t = t;
  if (u->fail_update) {
    ch_error_set(CH_ERR_INVALID_ARGUMENT, "update refused");
    ch_error_set_payload(u, nullptr);  // a host error object travels to the caller
    return CH_ERR_INVALID_ARGUMENT;
  }
  if (n_states != 2 || ch_array_dtype(param) != CH_FLOAT64) return CH_ERR_INTERNAL;
  double* p = static_cast<double*>(ch_array_data(param));
  const double* g = static_cast<const double*>(ch_array_data(grad));
  double* count = static_cast<double*>(ch_array_data(states[0]));
  double* acc = static_cast<double*>(ch_array_data(states[1]));
  *count += 1;
  for (int64_t i = 0; i < ch_array_size(param); ++i) {
    acc[i] += g[i];
    p[i] -= u->lr * acc[i];
  }
  return CH_OK;
}

void user_destroy(void* ud) { ++static_cast<UserState*>(ud)->destroyed; }

ch_optimizer_def user_def(UserState* u) {
  static const char* const names[] = {"n", "acc"};
  ch_optimizer_def d{};
  d.version = CH_OPTIMIZER_DEF_VERSION;
  d.name = "SumSGD";
  d.n_states = 2;
  d.state_names = names;
  d.init_state = user_init;
  d.update_one = user_update;
  d.user_data = u;
  d.destroy = user_destroy;
  return d;
}

TEST_F(OptimizerTest, UserDefinedOptimizer) {
  UserState u;
  {
    ch_optimizer_def d = user_def(&u);
    Opt o;
    ASSERT_CH_OK(ch_optimizer_new(o.out(), &d));
    EXPECT_STREQ(ch_optimizer_name(o), "SumSGD");
    Arr W = f64({3}, {1, 2, 3});
    Arr G = f64({3}, {1, 0, -1});
    ch_array* p[] = {W};
    ch_array* g[] = {G};
    ASSERT_CH_OK(ch_optimizer_setup_arrays(o, p, g, 1));
    EXPECT_EQ(u.init_calls, 1);
    ASSERT_CH_OK(ch_optimizer_update(o));
    ASSERT_CH_OK(ch_optimizer_update(o));
    EXPECT_EQ(u.update_calls, 2);
    EXPECT_EQ(u.last_t, 2);
    // acc = g then 2g; W -= 0.5 * g then 0.5 * 2g.
    EXPECT_TRUE(AllClose(values(W), {1 - 1.5, 2, 3 + 1.5}));
    ASSERT_EQ(ch_optimizer_state_count(o), 2u);
    Arr n;
    const char* key = nullptr;
    ASSERT_CH_OK(ch_optimizer_state(n.out(), &key, o, 0));
    EXPECT_STREQ(key, "0/n");
    EXPECT_TRUE(AllClose(values(n), {2}));
    ASSERT_CH_OK(ch_optimizer_state(n.out(), &key, o, 1));
    EXPECT_STREQ(key, "0/acc");
    EXPECT_TRUE(AllClose(values(n), {2, 0, -2}));
    double hp = 0;
    EXPECT_CH_ERR(CH_ERR_INVALID_ARGUMENT, ch_optimizer_get_hyperparam(&hp, o, "lr"));
    // A failing update names the optimizer, the callback and the parameter.
    u.fail_update = true;
    EXPECT_CH_ERR(CH_ERR_CALLBACK, ch_optimizer_update(o));
    EXPECT_TRUE(contains(ch_error_message(), "optimizer 'SumSGD'")) << ch_error_message();
    EXPECT_TRUE(contains(ch_error_message(), "update_one")) << ch_error_message();
    EXPECT_TRUE(contains(ch_error_message(), "parameter '0'")) << ch_error_message();
    EXPECT_TRUE(contains(ch_error_message(), "update refused")) << ch_error_message();
    EXPECT_EQ(ch_error_take_payload(), &u);
    u.fail_update = false;
    // A failing init_state leaves the previous setup in place.
    u.fail_init = true;
    EXPECT_CH_ERR(CH_ERR_CALLBACK, ch_optimizer_setup_arrays(o, p, g, 1));
    EXPECT_TRUE(contains(ch_error_message(), "init_state")) << ch_error_message();
    EXPECT_TRUE(contains(ch_error_message(), "init refused")) << ch_error_message();
    EXPECT_EQ(ch_optimizer_state_count(o), 2u);
    u.fail_init = false;
    // A state left NULL is an error, and the state already given is released.
    u.return_null_state = true;
    EXPECT_CH_ERR(CH_ERR_CALLBACK, ch_optimizer_setup_arrays(o, p, g, 1));
    EXPECT_TRUE(contains(ch_error_message(), "'acc'")) << ch_error_message();
    u.return_null_state = false;
    EXPECT_EQ(u.destroyed, 0);
  }
  EXPECT_EQ(u.destroyed, 1);
}

TEST_F(OptimizerTest, UserDefinedOptimizerWithoutInitStateGetsZeros) {
  UserState u;
  ch_optimizer_def d = user_def(&u);
  d.init_state = nullptr;
  d.destroy = nullptr;
  Opt o;
  ASSERT_CH_OK(ch_optimizer_new(o.out(), &d));
  Arr W = f64({2}, {1, 2});
  Arr G = f64({2}, {1, 1});
  ch_array* p[] = {W};
  ch_array* g[] = {G};
  ASSERT_CH_OK(ch_optimizer_setup_arrays(o, p, g, 1));
  Arr s;
  ASSERT_CH_OK(ch_optimizer_state(s.out(), nullptr, o, 0));
  EXPECT_EQ(shape_of(s), (std::vector<int64_t>{2}));
  EXPECT_TRUE(AllClose(values(s), {0, 0}));
}

TEST_F(OptimizerTest, UserDefinedOptimizerBadDefinitions) {
  UserState u;
  ch_optimizer_def d = user_def(&u);
  Opt o;
  d.update_one = nullptr;
  EXPECT_CH_ERR(CH_ERR_INVALID_ARGUMENT, ch_optimizer_new(o.out(), &d));
  d = user_def(&u);
  d.version = 99;
  EXPECT_CH_ERR(CH_ERR_INVALID_ARGUMENT, ch_optimizer_new(o.out(), &d));
  d = user_def(&u);
  static const char* const dup[] = {"a", "a"};
  d.state_names = dup;
  EXPECT_CH_ERR(CH_ERR_INVALID_ARGUMENT, ch_optimizer_new(o.out(), &d));
  static const char* const slash[] = {"a/b", "c"};
  d.state_names = slash;
  EXPECT_CH_ERR(CH_ERR_INVALID_ARGUMENT, ch_optimizer_new(o.out(), &d));
  d.state_names = nullptr;
  EXPECT_CH_ERR(CH_ERR_INVALID_ARGUMENT, ch_optimizer_new(o.out(), &d));
  EXPECT_CH_ERR(CH_ERR_INVALID_ARGUMENT, ch_optimizer_new(o.out(), nullptr));
  EXPECT_EQ(u.destroyed, 0);  // on failure the caller keeps its user data
}

}  // namespace
