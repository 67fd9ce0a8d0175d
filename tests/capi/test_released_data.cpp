// Released data (Chainer v2's retained inputs, see ch/variable.h): when the
// last handle to an intermediate variable goes and no consumer's backward
// reads its data, the data is freed at once. These tests check that
//  - backward gives the same gradients whether the intermediate's handle was
//    released early or kept (the kept run is the reference: each function's
//    own tests check it against NumPy), and numerically (check_backward on a
//    graph whose intermediates are released inside the callback);
//  - the memory really goes back to the allocator, and does not when a
//    consumer reads the data (linear, mul);
//  - a released variable reached through graph inspection reports its shape
//    but refuses its data and refuses to be used as an input, with a message;
//    ch_variable_set_data gives it data again.
#include <cmath>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "capi_test_util.h"

using namespace capi_test;

namespace {

class ReleasedData : public CapiTest {};

// One consumer of the intermediate h = 1.5 x, and what it is called.
struct Consumer {
  const char* name;
  std::vector<int64_t> shape;  // of x
  std::function<ch_status(ch_variable** out, ch_variable* h)> apply;
};

std::vector<Consumer> consumers_that_release() {
  return {
      {"relu", {3, 4}, [](ch_variable** o, ch_variable* h) { return ch_functions_relu(o, h); }},
      {"sigmoid",
       {3, 4},
       [](ch_variable** o, ch_variable* h) { return ch_functions_sigmoid(o, h); }},
      {"tanh", {3, 4}, [](ch_variable** o, ch_variable* h) { return ch_functions_tanh(o, h); }},
      {"softmax",
       {3, 4},
       [](ch_variable** o, ch_variable* h) { return ch_functions_softmax(o, h); }},
      {"exp", {3, 4}, [](ch_variable** o, ch_variable* h) { return ch_functions_exp(o, h); }},
      {"dropout",
       {3, 4},
       [](ch_variable** o, ch_variable* h) { return ch_functions_dropout(o, h, 0.5, 1); }},
      {"identity",
       {3, 4},
       [](ch_variable** o, ch_variable* h) { return ch_functions_identity(o, h); }},
      {"reshape",
       {3, 4},
       [](ch_variable** o, ch_variable* h) {
         const int64_t shape[2] = {6, 2};
         return ch_functions_reshape(o, h, shape, 2);
       }},
      {"sum", {3, 4}, [](ch_variable** o, ch_variable* h) { return ch_functions_sum(o, h); }},
      {"sum_axis",
       {3, 4},
       [](ch_variable** o, ch_variable* h) { return ch_functions_sum_axis(o, h, 1, 0); }},
      {"concat",
       {3, 4},
       [](ch_variable** o, ch_variable* h) {
         ch_variable* xs[2] = {h, h};
         return ch_functions_concat(o, xs, 2, 1);
       }},
      {"max_pooling_2d",
       {2, 1, 4, 5},
       [](ch_variable** o, ch_variable* h) {
         return ch_functions_max_pooling_2d(o, h, 2, 2, 2, 2, 0, 0, 1);
       }},
      {"average_pooling_2d",
       {2, 1, 4, 5},
       [](ch_variable** o, ch_variable* h) {
         return ch_functions_average_pooling_2d(o, h, 2, 2, 2, 2, 1, 0);
       }},
  };
}

std::vector<double> ramp(size_t n) {
  std::vector<double> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = 0.37 * static_cast<double>(i % 7) - 0.9;
  return v;
}

size_t count(const std::vector<int64_t>& shape) {
  size_t n = 1;
  for (int64_t d : shape) n *= static_cast<size_t>(d);
  return n;
}

// Builds h = 1.5 x, y = consumer(h), loss = sum(y * y); releases h's handle
// right after y is made when `release_early`; backward; returns x's gradient.
// *h_data_readable says whether h's data could still be read after backward
// (found through the graph: loss's creator's input ... y's creator's input).
std::vector<double> run(const Consumer& c, bool release_early, bool* h_data_readable) {
  ch_config_seed(7);  // the same dropout mask in both runs
  Var x = var_f64(c.shape, ramp(count(c.shape)));
  Var h, y, yy, loss;
  EXPECT_CH_OK(ch_functions_mul_scalar(h.out(), x, 1.5));
  EXPECT_CH_OK(c.apply(y.out(), h));
  if (release_early) h.reset();
  EXPECT_CH_OK(ch_functions_mul(yy.out(), y, y));
  EXPECT_CH_OK(ch_functions_sum(loss.out(), yy));
  EXPECT_CH_OK(ch_variable_backward(loss, 0));
  Fn creator;
  Var found;
  EXPECT_CH_OK(ch_variable_creator(creator.out(), y));
  EXPECT_CH_OK(ch_function_input(found.out(), creator, 0));
  Arr data;
  *h_data_readable = ch_variable_data(data.out(), found) == CH_OK;
  return grad_of(x);
}

TEST_F(ReleasedData, GradientsAreTheSameWhetherTheIntermediateWasReleasedOrKept) {
  for (const Consumer& c : consumers_that_release()) {
    SCOPED_TRACE(c.name);
    bool kept_readable = false, released_readable = true;
    const std::vector<double> kept = run(c, false, &kept_readable);
    const std::vector<double> released = run(c, true, &released_readable);
    EXPECT_TRUE(kept_readable) << "a variable with a live handle keeps its data";
    EXPECT_FALSE(released_readable) << c.name << " does not need h: its data is released";
    ASSERT_EQ(kept.size(), count(c.shape));
    EXPECT_TRUE(AllClose(released, kept, 0, 0));
  }
}

// softmax_cross_entropy reads its probabilities and labels, not x.
TEST_F(ReleasedData, SoftmaxCrossEntropyReleasesXButNotTheLabels) {
  for (bool release_early : {false, true}) {
    Var x = var_f64({3, 4}, ramp(12));
    Var t = make_var(make_array(CH_INT32, {3}, {1, 0, 3}));
    Var h, t2, loss;
    ASSERT_CH_OK(ch_functions_mul_scalar(h.out(), x, 1.5));
    ASSERT_CH_OK(ch_functions_identity(t2.out(), t));
    ASSERT_CH_OK(ch_functions_softmax_cross_entropy(loss.out(), h, t2));
    if (release_early) {
      h.reset();
      t2.reset();
    }
    ASSERT_CH_OK(ch_variable_backward(loss, 0));
    Fn sce;
    Var in0, in1;
    ASSERT_CH_OK(ch_variable_creator(sce.out(), loss));
    ASSERT_CH_OK(ch_function_input(in0.out(), sce, 0));
    ASSERT_CH_OK(ch_function_input(in1.out(), sce, 1));
    Arr d0, d1;
    EXPECT_EQ(ch_variable_data(d0.out(), in0) == CH_OK, !release_early);
    EXPECT_CH_OK(ch_variable_data(d1.out(), in1));  // the labels stay
    // gx = 1.5 (softmax(1.5 x) - onehot(t)) / 3, from the probabilities kept.
    const std::vector<double> v = ramp(12);
    std::vector<double> expected(12);
    const int labels[3] = {1, 0, 3};
    for (int i = 0; i < 3; ++i) {
      double z = 0;
      for (int j = 0; j < 4; ++j) z += std::exp(1.5 * v[static_cast<size_t>(i * 4 + j)]);
      for (int j = 0; j < 4; ++j) {
        const size_t k = static_cast<size_t>(i * 4 + j);
        expected[k] = 1.5 * (std::exp(1.5 * v[k]) / z - (j == labels[i] ? 1.0 : 0.0)) / 3.0;
      }
    }
    EXPECT_TRUE(AllClose(grad_of(x), expected, 1e-12, 1e-12));
  }
}

// Numerical check of a graph whose intermediates are released as soon as
// they are consumed: x -> 1.5 x -> tanh -> reshape -> max_pooling -> exp.
ch_status released_chain(void*, ch_variable* const* in, size_t, ch_variable** out, size_t) {
  ch_variable *a = nullptr, *b = nullptr, *c = nullptr, *d = nullptr;
  const int64_t shape[4] = {1, 1, 4, 6};
  ch_status st = ch_functions_mul_scalar(&a, in[0], 1.5);
  if (st == CH_OK) st = ch_functions_tanh(&b, a);
  ch_variable_release(a);
  if (st == CH_OK) st = ch_functions_reshape(&c, b, shape, 4);
  ch_variable_release(b);
  if (st == CH_OK) st = ch_functions_max_pooling_2d(&d, c, 2, 3, 2, 3, 0, 0, 1);
  ch_variable_release(c);
  if (st == CH_OK) st = ch_functions_exp(&out[0], d);
  ch_variable_release(d);
  return st;
}

TEST_F(ReleasedData, NumericalGradientThroughReleasedIntermediates) {
  std::vector<double> v(24);  // distinct values: no ties in the pooling windows
  for (size_t i = 0; i < v.size(); ++i) v[i] = 0.05 * static_cast<double>((i * 5) % 24) - 0.6;
  Arr x = f64({4, 6}, v);
  ch_array* xs[1] = {x.get()};
  ch_array* ones[1] = {nullptr};  // NULL: ones
  EXPECT_CH_OK(ch_check_backward_graph(released_chain, nullptr, xs, 1, ones, 1, 1e-6, 1e-7, 1e-6));
}

int64_t bytes_in_use() {
  ch_memory_stats s{};
  EXPECT_CH_OK(ch_memory_stats_get(&s, cpu()));
  return s.bytes_in_use;
}

// 2^20 float32 elements (4 MiB): releasing h's handle frees them when relu
// consumes h, and frees nothing when mul (which reads h) does. relu computes
// y when y is first read, over h's bytes once h's handle is gone: the 4 MiB
// come back then (y's own block, never written), and y holds h's values
// through relu (NumPy: maximum(2 x, 0) = 1 for x = 0.5).
TEST_F(ReleasedData, ReleasingTheHandleFreesTheMemoryOnlyWhenNoConsumerReadsIt) {
  const int64_t n = int64_t{1} << 20, bytes = n * 4;
  for (bool consumer_reads_h : {false, true}) {
    SCOPED_TRACE(consumer_reads_h ? "mul" : "relu");
    Arr a = full(CH_FLOAT32, {n}, 0.5);
    Var x = make_var(a), h, y;
    ASSERT_CH_OK(ch_functions_mul_scalar(h.out(), x, 2.0));
    if (consumer_reads_h)
      ASSERT_CH_OK(ch_functions_mul(y.out(), h, x));
    else
      ASSERT_CH_OK(ch_functions_relu(y.out(), h));
    const int64_t before = bytes_in_use();
    h.reset();
    Arr yd;
    ASSERT_CH_OK(ch_variable_data(yd.out(), y));
    double first = 0, last = 0;
    ASSERT_CH_OK(ch_array_get(&first, yd, 0));
    ASSERT_CH_OK(ch_array_get(&last, yd, n - 1));
    const int64_t freed = before - bytes_in_use();
    if (consumer_reads_h) {
      EXPECT_EQ(freed, 0);
      EXPECT_EQ(first, 0.5);  // h x = 1 x 0.5
      EXPECT_EQ(last, 0.5);
    } else {
      EXPECT_GE(freed, bytes);
      EXPECT_EQ(first, 1.0);
      EXPECT_EQ(last, 1.0);
    }
  }
}

TEST_F(ReleasedData, AReleasedVariableRefusesItsDataAndInputUseUntilGivenNewData) {
  Var x = var_f32({2, 3}, {1, -2, 3, -4, 5, -6}), h, y;
  ASSERT_CH_OK(ch_functions_mul_scalar(h.out(), x, 2.0));
  ASSERT_CH_OK(ch_functions_relu(y.out(), h));
  h.reset();
  Fn relu;
  Var found, z;
  ASSERT_CH_OK(ch_variable_creator(relu.out(), y));
  ASSERT_CH_OK(ch_function_input(found.out(), relu, 0));
  EXPECT_EQ(ch_variable_size(found), 6) << "the shape is still known";
  EXPECT_EQ(creator_name(found), "MulScalar");
  Arr data;
  EXPECT_EQ(ch_variable_data(data.out(), found), CH_ERR_GRAPH);
  EXPECT_TRUE(contains(ch_error_message(), "was released")) << ch_error_message();
  EXPECT_TRUE(contains(ch_error_message(), "float32 array of shape (2, 3)")) << ch_error_message();
  EXPECT_EQ(ch_functions_relu(z.out(), found), CH_ERR_GRAPH);
  EXPECT_TRUE(contains(ch_error_message(), "data was released")) << ch_error_message();
  // The graph still works: backward through relu needs only y.
  Arr ones = full(CH_FLOAT32, {2, 3}, 1.0);
  ASSERT_CH_OK(ch_variable_set_grad(y, ones));
  ASSERT_CH_OK(ch_variable_backward(y, 0));
  EXPECT_TRUE(AllClose(grad_of(x), {2, 0, 2, 0, 2, 0}, 0, 0));
  // New data makes it usable again.
  Arr fresh = f32({2, 3}, {1, 1, 1, 1, 1, 1});
  ASSERT_CH_OK(ch_variable_set_data(found, fresh));
  ASSERT_CH_OK(ch_functions_relu(z.out(), found));
  EXPECT_TRUE(AllClose(data_of(z), {1, 1, 1, 1, 1, 1}, 0, 0));
}

// A consumer that does not read its input's data still refuses, in
// backward, a replacement of that input of another shape (as a reading one
// does): the gradient would not match the data it is the gradient of.
TEST_F(ReleasedData, NonReadingConsumerStillRefusesAReplacementOfAnotherShape) {
  Var x = var_f32({2, 3}, {1, -2, 3, -4, 5, -6}), h, y, loss;
  ASSERT_CH_OK(ch_functions_mul_scalar(h.out(), x, 2.0));
  ASSERT_CH_OK(ch_functions_relu(y.out(), h));
  ASSERT_CH_OK(ch_functions_sum(loss.out(), y));
  Arr other = f32({4}, {1, 2, 3, 4});
  ASSERT_CH_OK(ch_variable_set_data(h, other));
  EXPECT_EQ(ch_variable_backward(loss, 0), CH_ERR_SHAPE);
  EXPECT_TRUE(contains(ch_error_message(), "input 0 of 'ReLU'")) << ch_error_message();
}

// Roots keep their data whatever their handles (an output no function
// consumed is freed with its last handle; check_backward_graph above reads
// the outputs its callback released).
TEST_F(ReleasedData, RootsKeepTheirData) {
  Var x = var_f32({3}, {1, 2, 3}), y;
  ASSERT_CH_OK(ch_functions_relu(y.out(), x));
  Fn relu_node;
  ASSERT_CH_OK(ch_variable_creator(relu_node.out(), y));
  x.reset();  // relu does not need it, but roots are never released
  Var root;
  ASSERT_CH_OK(ch_function_input(root.out(), relu_node, 0));
  EXPECT_TRUE(AllClose(data_of(root), {1, 2, 3}, 0, 0));
}

// Handles may be released on any thread (garbage-collector finalizers): the
// intermediates' handles go on a second thread while the first runs
// backward through the functions that consume them. The gradient of
// sum(exp(relu(tanh(1.5 x)))) must come out right every time (and the
// sanitizer pass would report a race on the released data).
TEST_F(ReleasedData, HandlesReleasedOnAnotherThreadDuringBackward) {
  const size_t n = 4096;
  std::vector<double> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<double>(i % 17) / 8.0 - 1.0;
  std::vector<double> expected(n);
  for (size_t i = 0; i < n; ++i) {
    const double t = std::tanh(1.5 * v[i]), r = t > 0 ? t : 0;
    expected[i] = t > 0 ? std::exp(r) * (1 - t * t) * 1.5 : 0.0;
  }
  for (int round = 0; round < 50; ++round) {
    Var x = var_f64({static_cast<int64_t>(n)}, v), e, loss;
    ch_variable *h1 = nullptr, *h2 = nullptr, *h3 = nullptr;
    ASSERT_CH_OK(ch_functions_mul_scalar(&h1, x, 1.5));
    ASSERT_CH_OK(ch_functions_tanh(&h2, h1));
    ASSERT_CH_OK(ch_functions_relu(&h3, h2));
    ASSERT_CH_OK(ch_functions_exp(e.out(), h3));
    ASSERT_CH_OK(ch_functions_sum(loss.out(), e));
    std::thread finalizer([&] {
      for (ch_variable* h : {h3, h1, h2}) EXPECT_CH_OK(ch_variable_release(h));
    });
    const ch_status st = ch_variable_backward(loss, 0);
    finalizer.join();
    ASSERT_CH_OK(st);
    ASSERT_TRUE(AllClose(grad_of(x), expected, 1e-12, 1e-12)) << "round " << round;
  }
}

}  // namespace
