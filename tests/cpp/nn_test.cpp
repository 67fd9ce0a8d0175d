// ch::F and ch::config of ch.hpp: every wrapper gives the same values as the C API call it
// wraps (computed here through the C API directly on the same inputs), the seed's Linear
// example, an error path, and a tiny MLP trained with ch::Optimizer.
#include <cmath>

#include "test_util.h"

namespace {

using ch_test::contains;
using ch_test::expect_values;
using ch_test::random_array;

ch::Variable var(const ch::Array& a) { return ch::Variable(a); }

// Exactly equal values and shapes (same library call on the same inputs).
void expect_same(const ch::Array& got, const ch::Array& want) {
  ASSERT_TRUE(got.valid());
  ASSERT_TRUE(want.valid());
  EXPECT_EQ(got.shape(), want.shape());
  EXPECT_EQ(got.dtype(), want.dtype());
  EXPECT_EQ(got.to_vector<double>(), want.to_vector<double>());
}

// The C API results, adopted into RAII handles.
ch::Array c_result(ch_status st, ch_variable* out) {
  ch::Variable v = ch::Variable::adopt(out);
  EXPECT_EQ(st, CH_OK) << ch_error_message();
  return v.data();
}
ch::Array c_unary(ch_status (*f)(ch_variable**, ch_variable*), const ch::Variable& x) {
  ch_variable* out = nullptr;
  ch_status st = f(&out, x.get());
  return c_result(st, out);
}
ch::Array c_binary(ch_status (*f)(ch_variable**, ch_variable*, ch_variable*), const ch::Variable& a,
                   const ch::Variable& b) {
  ch_variable* out = nullptr;
  ch_status st = f(&out, a.get(), b.get());
  return c_result(st, out);
}
ch::Array c_apply(ch_function* f, std::vector<ch_variable*> in) {
  ch_variable* out = nullptr;
  ch_status st = ch_function_apply(f, in.data(), in.size(), &out, 1, nullptr);
  return c_result(st, out);
}

TEST(NN, ActivationsMatchCApi) {
  ch::Variable x = var(random_array({3, 4}, CH_FLOAT64, 1));
  expect_same(ch::F::relu(x).data(), c_unary(ch_functions_relu, x));
  expect_same(ch::F::sigmoid(x).data(), c_unary(ch_functions_sigmoid, x));
  expect_same(ch::F::tanh(x).data(), c_unary(ch_functions_tanh, x));
  expect_same(ch::F::softmax(x).data(), c_unary(ch_functions_softmax, x));
  ch_variable* out = nullptr;
  ch_status st = ch_functions_leaky_relu(&out, x.get(), 0.2);  // the seed's default slope
  expect_same(ch::F::leaky_relu(x).data(), c_result(st, out));
  st = ch_functions_leaky_relu(&out, x.get(), 0.5);
  expect_same(ch::F::leaky_relu(x, 0.5).data(), c_result(st, out));
}

TEST(NN, LstmReturnsCellAndHidden) {
  ch::Variable c_prev = var(random_array({2, 3}, CH_FLOAT32, 2));
  ch::Variable x = var(random_array({2, 12}, CH_FLOAT32, 3));
  auto [c, h] = ch::F::lstm(c_prev, x);
  ch_variable* cc = nullptr;
  ch_variable* ch_ = nullptr;
  ch_status st = ch_functions_lstm(&cc, &ch_, c_prev.get(), x.get());
  ch::Array want_h = c_result(st, ch_);
  expect_same(c.data(), c_result(st, cc));
  expect_same(h.data(), want_h);
  EXPECT_THROW(ch::F::lstm(c_prev, var(random_array({2, 5}, CH_FLOAT32, 3))), ch::Error);
}

TEST(NN, ArrayAndMathFunctionsMatchCApi) {
  ch::Variable a = var(random_array({2, 3}, CH_FLOAT32, 4));
  ch::Variable b = var(random_array({2, 2}, CH_FLOAT32, 5));
  ch_variable* out = nullptr;
  ch_status st = ch_functions_transpose(&out, a.get(), nullptr, 0);
  expect_same(ch::F::transpose(a).data(), c_result(st, out));
  const int32_t axes[2] = {1, 0};
  st = ch_functions_transpose(&out, a.get(), axes, 2);
  expect_same(ch::F::transpose(a, {1, 0}).data(), c_result(st, out));
  ch_variable* xs[2] = {a.get(), b.get()};
  st = ch_functions_concat(&out, xs, 2, 1);
  ch::Variable cat = ch::F::concat({a, b});  // the seed's default axis 1
  EXPECT_EQ(cat.shape(), (ch::Shape{2, 5}));
  expect_same(cat.data(), c_result(st, out));
  st = ch_functions_copy(&out, a.get(), ch_device_cpu());
  expect_same(ch::F::copy(a, ch::cpu()).data(), c_result(st, out));

  st = ch_functions_matmul(&out, a.get(), a.get(), 0, 1);
  expect_same(ch::F::matmul(a, a, false, true).data(), c_result(st, out));
  st = ch_functions_matmul(&out, b.get(), a.get(), 0, 0);
  expect_same(ch::F::matmul(b, a).data(), c_result(st, out));
  ch::Variable p = var(random_array({3, 2, 4}, CH_FLOAT32, 6));
  ch::Variable q = var(random_array({3, 4, 2}, CH_FLOAT32, 7));
  st = ch_functions_batch_matmul(&out, p.get(), q.get(), 0, 0);
  expect_same(ch::F::batch_matmul(p, q).data(), c_result(st, out));
  st = ch_functions_batch_matmul(&out, p.get(), p.get(), 1, 0);
  expect_same(ch::F::batch_matmul(p, p, true).data(), c_result(st, out));
}

TEST(NN, LossesAndAccuracyMatchCApi) {
  ch::Variable y = var(random_array({4, 3}, CH_FLOAT64, 8));
  ch::Variable t(ch::Array(std::vector<int32_t>{0, 2, 1, 2}));
  expect_same(ch::F::softmax_cross_entropy(y, t).data(),
              c_binary(ch_functions_softmax_cross_entropy, y, t));
  expect_same(ch::F::accuracy(y, t).data(), c_binary(ch_functions_accuracy, y, t));
  ch::Variable z = var(random_array({4, 3}, CH_FLOAT64, 9));
  expect_same(ch::F::mean_squared_error(y, z).data(),
              c_binary(ch_functions_mean_squared_error, y, z));
}

TEST(NN, DropoutModes) {
  ch::Variable x = var(random_array({4, 5}, CH_FLOAT32, 10));
  // Test mode: x itself (a new handle to it). Train mode: the same mask as the C call after the
  // same seed.
  ch::Variable same = ch::F::dropout(x, 0.5, CH_MODE_TEST);
  EXPECT_EQ(same.data().raw_data(), x.data().raw_data());  // x's data, no copy
  EXPECT_FALSE(same.creator().valid());                    // no graph node
  ch::config::seed(7);
  ch::Variable y = ch::F::dropout(x, 0.25, CH_MODE_TRAIN);
  ch::config::seed(7);
  ch_variable* out = nullptr;
  ch_status st = ch_functions_dropout(&out, x.get(), 0.25, CH_MODE_TRAIN);
  expect_same(y.data(), c_result(st, out));
  {
    ch::config::TrainMode test(false);  // CH_MODE_DEFAULT follows ch::config
    EXPECT_FALSE(ch::config::train());
    EXPECT_EQ(ch::F::dropout(x).data().raw_data(), x.data().raw_data());
  }
  EXPECT_TRUE(ch::config::train());
  EXPECT_THROW(ch::F::dropout(x, 1.0), ch::Error);  // ratio must be in [0, 1)
}

TEST(NN, PoolingAndNormalizationMatchCApi) {
  ch::Variable x = var(random_array({2, 3, 5, 5}, CH_FLOAT32, 11));
  ch_variable* out = nullptr;
  // The seed's defaults: stride = ksize (None), pad 0, cover_all.
  ch_status st = ch_functions_max_pooling_2d(&out, x.get(), 2, 2, 2, 2, 0, 0, 1);
  ch::Variable m = ch::F::max_pooling_2d(x, 2);
  EXPECT_EQ(m.shape(), (ch::Shape{2, 3, 3, 3}));
  expect_same(m.data(), c_result(st, out));
  st = ch_functions_max_pooling_2d(&out, x.get(), 3, 2, 1, 2, 1, 0, 0);
  expect_same(ch::F::max_pooling_2d(x, {3, 2}, {1, 2}, {1, 0}, false).data(), c_result(st, out));
  st = ch_functions_average_pooling_2d(&out, x.get(), 2, 2, 2, 2, 0, 0);
  expect_same(ch::F::average_pooling_2d(x, 2).data(), c_result(st, out));
  st = ch_functions_average_pooling_2d(&out, x.get(), 3, 3, 1, 1, 1, 1);
  expect_same(ch::F::average_pooling_2d(x, 3, 1, std::make_pair(1, 1)).data(), c_result(st, out));
  st = ch_functions_local_response_normalization(&out, x.get(), 5, 2, 1e-4, 0.75);
  expect_same(ch::F::local_response_normalization(x).data(), c_result(st, out));
}

// The seed's tutorial (1.1.3), as tests/ops/connection/test_linear.cpp: y as printed by the
// seed; with y.grad = ones, gW = [[5, 7, 9], [5, 7, 9]] and gb = [2, 2].
TEST(NN, SeedLinearExample) {
  ch::Array W(std::vector<float>{1.33545339f, -0.01839679f, 0.7662735f, -1.21562171f, -0.44784674f,
                                 -0.07128379f},
              {2, 3});
  ch::Function f = ch::F::Linear(3, 2, 1, 0, false, W);
  ASSERT_EQ(f.parameter_count(), 2u);
  EXPECT_EQ(f.parameter(0).name, "W");
  EXPECT_EQ(f.parameter(1).name, "b");
  expect_values(f.parameter(1).param, {2}, {0, 0});
  ch::Variable x(ch::Array(std::vector<float>{1, 2, 3, 4, 5, 6}, {2, 3}));
  ch::Variable y = f(x);
  expect_values(y.data(), {2, 2}, {3.5974803, -2.3251667, 9.84747124, -7.52942371}, 1e-5);
  y.set_grad(ch::Array::ones_like(y.data()));
  y.backward();
  expect_values(f.parameter(0).grad, {2, 3}, {5, 7, 9, 5, 7, 9});
  expect_values(f.parameter(1).grad, {2}, {2, 2});
  // nobias leaves only W.
  EXPECT_EQ(ch::F::Linear(3, 2, 1, 0, true).parameter_count(), 1u);
}

// Each factory gives a function object whose application equals the C API constructor's
// with the same parameter values.
TEST(NN, ParameterizedFactoriesMatchCApi) {
  {  // Linear, float64, given W and b
    ch::Array W = random_array({4, 3}, CH_FLOAT64, 12), b = random_array({4}, CH_FLOAT64, 13);
    ch::Function f = ch::F::Linear(3, 4, 1, 0, false, W, b, CH_FLOAT64);
    ch_function* g = nullptr;
    ASSERT_EQ(ch_functions_linear_new(&g, 3, 4, CH_FLOAT64, 1, 0, 0, W.get(), b.get()), CH_OK);
    ch::Function gf = ch::Function::adopt(g);
    ch::Variable x = var(random_array({2, 3}, CH_FLOAT64, 14));
    expect_same(f(x).data(), c_apply(g, {x.get()}));
  }
  {  // Convolution2D with ksize 3, stride 2, pad 1 and the (h, w) forms
    ch::Array W = random_array({2, 3, 3, 2}, CH_FLOAT32, 15);
    ch::Function f = ch::F::Convolution2D(3, 2, {3, 2}, 2, {1, 0}, 1, 0.5, false, W);
    ch_function* g = nullptr;
    ASSERT_EQ(ch_functions_convolution_2d_new(&g, 3, 2, 3, 2, 2, 2, 1, 0, CH_FLOAT32, 1, 0.5, 0,
                                              W.get(), nullptr),
              CH_OK);
    ch::Function gf = ch::Function::adopt(g);
    ch::Variable x = var(random_array({2, 3, 6, 5}, CH_FLOAT32, 16));
    expect_same(f(x).data(), c_apply(g, {x.get()}));
    EXPECT_EQ(ch::F::Convolution2D(3, 8, 5).parameter(0).param.shape(), (ch::Shape{8, 3, 5, 5}));
  }
  {  // EmbedID
    ch::Array W = random_array({5, 2}, CH_FLOAT32, 17);
    ch::Function f = ch::F::EmbedID(5, 2, W);
    ch_function* g = nullptr;
    ASSERT_EQ(ch_functions_embed_id_new(&g, 5, 2, CH_FLOAT32, W.get()), CH_OK);
    ch::Function gf = ch::Function::adopt(g);
    ch::Variable ids(ch::Array(std::vector<int32_t>{4, 0, 2}));
    expect_same(f(ids).data(), c_apply(g, {ids.get()}));
  }
  {  // PReLU with the seed's default (one slope 0.25)
    ch::Function f = ch::F::PReLU();
    ch_function* g = nullptr;
    ASSERT_EQ(ch_functions_prelu_new(&g, nullptr, 0, CH_FLOAT32, 0.25), CH_OK);
    ch::Function gf = ch::Function::adopt(g);
    ch::Variable x = var(random_array({3, 4}, CH_FLOAT32, 18));
    expect_same(f(x).data(), c_apply(g, {x.get()}));
    EXPECT_EQ(ch::F::PReLU({4}).parameter(0).param.shape(), (ch::Shape{4}));
  }
  {  // Parameter: no inputs, outputs a copy of its array
    ch::Array a = random_array({2, 2}, CH_FLOAT32, 19);
    ch::Function p = ch::F::Parameter(a);
    expect_same(p().data(), a);
  }
  {  // Inception: same shapes of the 12 parameters, output with all branches' channels
    ch::Function f = ch::F::Inception(3, 2, 2, 3, 2, 4, 1);
    EXPECT_EQ(f.parameter_count(), 12u);
    ch::Variable x = var(random_array({1, 3, 4, 4}, CH_FLOAT32, 20));
    EXPECT_EQ(f(x).shape(), (ch::Shape{1, 10, 4, 4}));
  }
  {  // BinaryHierarchicalSoftmax with the Huffman tree of the C API
    std::vector<double> counts{3, 1, 2, 5};
    std::vector<int32_t> tree = ch::F::create_huffman_tree(counts);
    std::vector<int32_t> want(6);
    ASSERT_EQ(ch_functions_binary_hierarchical_softmax_create_huffman_tree(want.data(), 6,
                                                                           counts.data(), 4),
              CH_OK);
    EXPECT_EQ(tree, want);
    ch::Array W = random_array({3, 2}, CH_FLOAT64, 21);
    ch::Function f = ch::F::BinaryHierarchicalSoftmax(2, tree, W, CH_FLOAT64);
    ch_function* g = nullptr;
    ASSERT_EQ(
        ch_functions_binary_hierarchical_softmax_new(&g, 2, tree.data(), 3, CH_FLOAT64, W.get()),
        CH_OK);
    ch::Function gf = ch::Function::adopt(g);
    ch::Variable x = var(random_array({2, 2}, CH_FLOAT64, 22));
    ch::Variable t(ch::Array(std::vector<int32_t>{3, 1}));
    expect_same(f(x, t).data(), c_apply(g, {x.get(), t.get()}));
  }
}

TEST(NN, BatchNormalizationModesAndState) {
  ch::F::BatchNormalization bn({3});
  EXPECT_EQ(bn.parameter_count(), 2u);  // gamma, beta
  ch_function* g = nullptr;
  const int64_t size[1] = {3};
  ASSERT_EQ(ch_functions_batch_normalization_new(&g, size, 1, 0.9, 1e-5, CH_FLOAT32), CH_OK);
  ch::Function gf = ch::Function::adopt(g);
  ch::Variable x = var(random_array({4, 3}, CH_FLOAT32, 23));
  ch_variable* out = nullptr;
  ch_status st = ch_functions_batch_normalization_apply(&out, g, x.get(), CH_MODE_TRAIN, 0);
  expect_same(bn(x, CH_MODE_TRAIN).data(), c_result(st, out));
  expect_same(bn.avg_mean(), ch::F::BatchNormalization(gf).avg_mean());
  expect_same(bn.avg_var(), ch::F::BatchNormalization(gf).avg_var());
  st = ch_functions_batch_normalization_apply(&out, g, x.get(), CH_MODE_TEST, 0);
  expect_same(bn(x, false).data(), c_result(st, out));
  {
    ch::config::TrainMode test(false);  // bn(x) follows the default mode
    expect_same(bn(x).data(), bn(x, CH_MODE_TEST).data());
  }
  bn.start_finetuning();
  EXPECT_THROW(bn(var(random_array({4, 5}, CH_FLOAT32, 24))), ch::Error);
}

TEST(NN, ErrorCarriesStatusAndMessage) {
  ch::Function f = ch::F::Linear(3, 2);
  ch::Variable x = var(random_array({2, 4}, CH_FLOAT32, 25));
  try {
    f(x);
    FAIL() << "expected ch::Error";
  } catch (const ch::Error& e) {
    EXPECT_EQ(e.status(), CH_ERR_SHAPE);
    EXPECT_TRUE(contains(e.what(), "4")) << e.what();  // names the bad extent
  }
  ch::Variable y = var(random_array({2, 3}, CH_FLOAT32, 26));
  ch::Variable t(ch::Array(std::vector<int32_t>{0, 3}));  // label 3 of 3 classes
  try {
    ch::F::softmax_cross_entropy(y, t);
    FAIL() << "expected ch::Error";
  } catch (const ch::Error& e) {
    EXPECT_EQ(e.status(), CH_ERR_INVALID_ARGUMENT);
    EXPECT_TRUE(contains(e.what(), "3")) << e.what();
  }
  EXPECT_THROW(ch::config::set_num_threads(0), ch::Error);
}

TEST(NN, ConfigRoundTrips) {
  const int32_t n = ch::config::num_threads();
  ch::config::set_num_threads(1);
  EXPECT_EQ(ch::config::num_threads(), 1);
  ch::config::set_num_threads(n);
  EXPECT_FALSE(ch::config::blas().empty());
  ch::config::set_train(false);
  EXPECT_FALSE(ch::config::train());
  ch::config::set_train(true);
  EXPECT_TRUE(ch::config::train());
  // cuDNN on and TF32 off by default; both round-trip.
  EXPECT_TRUE(ch::config::use_cudnn());
  EXPECT_FALSE(ch::config::allow_tf32());
  ch::config::set_use_cudnn(false);
  ch::config::set_allow_tf32(true);
  EXPECT_FALSE(ch::config::use_cudnn());
  EXPECT_TRUE(ch::config::allow_tf32());
  EXPECT_EQ(ch_config_use_cudnn(), 0);
  EXPECT_EQ(ch_config_allow_tf32(), 1);
  ch_config_set_use_cudnn(7);  // any non-zero value is on
  EXPECT_EQ(ch_config_use_cudnn(), 1);
  ch::config::set_allow_tf32(false);
  EXPECT_FALSE(ch::config::allow_tf32());
  // The GEMM library and the directory of its choices.
  EXPECT_EQ(ch::config::gemm(), "auto");
  ch::config::set_gemm("openblas");
  EXPECT_EQ(ch::config::gemm(), "openblas");
  EXPECT_THROW(ch::config::set_gemm("no-such-blas"), ch::Error);
  EXPECT_EQ(ch::config::gemm(), "openblas");
  ch::config::set_gemm("auto");
  EXPECT_EQ(ch::config::gemm(), "auto");
  const std::string cache = ch::config::gemm_cache();
  ch::config::set_gemm_cache("");
  EXPECT_EQ(ch::config::gemm_cache(), "");
  EXPECT_TRUE(contains(ch::config::blas(), "choices not kept on disk")) << ch::config::blas();
  ch::config::set_gemm_cache(std::string("/tmp/chainerc-cpp-test-gemm"));
  EXPECT_EQ(ch::config::gemm_cache(), "/tmp/chainerc-cpp-test-gemm");
  EXPECT_THROW(ch::config::set_gemm_cache(std::string(5000, 'x')), ch::Error);
  EXPECT_EQ(ch::config::gemm_cache(), "/tmp/chainerc-cpp-test-gemm");
  ch::config::set_gemm_cache(cache);
  EXPECT_EQ(ch::config::gemm_cache(), cache);
  ch::config::set_deterministic(true);
  EXPECT_TRUE(ch::config::deterministic());
  ch::config::set_deterministic(false);
  EXPECT_FALSE(ch::config::deterministic());
}

// A 2-8-2 MLP on a fixed synthetic problem (the class is whether x0 + x1 > 0) trained by
// Adam through a FunctionSet: the loss falls well below its start.
TEST(NN, TinyMlpTrains) {
  ch::config::seed(3);
  ch::Function l1 = ch::F::Linear(2, 8), l2 = ch::F::Linear(8, 2);
  ch::FunctionSet model = ch::FunctionSet::create({{"l1", l1}, {"l2", l2}});
  ch::Optimizer opt = ch::Optimizer::adam(0.05);
  opt.setup(model);
  ch::Array xa = random_array({32, 2}, CH_FLOAT32, 27);
  std::vector<float> xv = xa.to_vector<float>();
  std::vector<int32_t> tv(32);
  for (size_t i = 0; i < tv.size(); ++i) tv[i] = xv[2 * i] + xv[2 * i + 1] > 0 ? 1 : 0;
  ch::Variable x(xa);
  ch::Variable t{ch::Array(tv)};
  x.set_requires_grad(false);
  EXPECT_FALSE(x.requires_grad());
  double first = 0, last = 0, acc = 0;
  for (int step = 0; step < 100; ++step) {
    opt.zero_grads();
    ch::Variable y = l2(ch::F::relu(l1(x)));
    ch::Variable loss = ch::F::softmax_cross_entropy(y, t);
    loss.backward();
    opt.update();
    if (step == 0) first = loss.data().item();
    last = loss.data().item();
    acc = ch::F::accuracy(y, t).data().item();
  }
  EXPECT_LT(last, 0.5 * first) << "first " << first << " last " << last;
  EXPECT_GE(acc, 0.9);
}

}  // namespace

namespace {

// Every handle the wrappers create is released with its RAII owner, on success and on error.
TEST(NN, WrappersLeakNoHandles) {
  const int64_t before = ch::debug::live_handles();
  {
    ch::F::BatchNormalization bn({3});
    ch::Function l = ch::F::Linear(3, 3);
    ch::Variable x(random_array({2, 3}, CH_FLOAT32, 28));
    ch::Variable c(random_array({2, 3}, CH_FLOAT32, 29));
    auto [c1, h1] = ch::F::lstm(c, ch::F::concat({x, x, x, x}));
    ch::Variable y = ch::F::sigmoid(bn(l(h1), CH_MODE_TRAIN));
    ch::sum(ch::F::dropout(y) + c1).backward();
    EXPECT_THROW(ch::F::lstm(c, x), ch::Error);
    EXPECT_THROW(bn.avg_mean() = ch::F::BatchNormalization(l).avg_mean(), ch::Error);
  }
  EXPECT_EQ(ch::debug::live_handles(), before);
}

}  // namespace
