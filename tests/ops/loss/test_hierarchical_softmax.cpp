// BinaryHierarchicalSoftmax (ch_functions_binary_hierarchical_softmax_new) and
// its Huffman tree builder, against a NumPy re-implementation of Chainer
// 1.0.1's hierarchical_softmax.py.
#include <cmath>
#include <iterator>

#include "hierarchical_softmax_references.h"
#include "rnn_test_util.h"

namespace {

using namespace optest;
using namespace rnntest;

using HSMTest = OpTest;

struct RefCase {
  const char* name;
  const int32_t* tree;
  int64_t n_internal;
  const ref::Tensor &W, &x, &t, &loss, &gloss, &gx, &gW;
};
#define HSM_CASE(p)                                                                             \
  RefCase {                                                                                     \
#p, hsm_ref::p##_tree, hsm_ref::p##_n_internal, hsm_ref::p##_W, hsm_ref::p##_x,             \
        hsm_ref::p##_t, hsm_ref::p##_loss, hsm_ref::p##_gloss, hsm_ref::p##_gx, hsm_ref::p##_gW \
  }
const RefCase kCases[] = {HSM_CASE(small), HSM_CASE(huff)};

Func make_hsm(ch_dtype dt, const RefCase& c) {
  Array w = make_array(dt, c.W);
  Func f;
  OPTEST_OK(ch_functions_binary_hierarchical_softmax_new(f.out(), c.W.shape[1], c.tree,
                                                         c.n_internal, dt, w.get()));
  return f;
}

ch_status apply2(const Func& f, const Var& x, const Var& t, Var& y) {
  ch_variable* in[2] = {x.get(), t.get()};
  return ch_function_apply(f.get(), in, 2, y.out(), 1, nullptr);
}

TEST_F(HSMTest, ForwardAndBackwardMatchNumPy) {
  for (const RefCase& c : kCases)
    for (ch_dtype dt : {CH_FLOAT64, CH_FLOAT32}) {
      SCOPED_TRACE(std::string(c.name) + " " + ch_dtype_name(dt));
      Func f = make_hsm(dt, c);
      EXPECT_STREQ(ch_function_name(f.get()), "BinaryHierarchicalSoftmax");
      ASSERT_EQ(ch_function_parameter_count(f.get()), 1u);
      Param p = param_of(f, 0);
      EXPECT_EQ(p.name, "W");
      EXPECT_TRUE(all_close(p.param.get(), dt, c.W, Tol{0, 0}));
      Var x = make_var(make_array(dt, c.x)), t = make_var(make_array(CH_INT32, c.t));
      Var y;
      ASSERT_EQ(apply2(f, x, t, y), CH_OK) << ch_error_message();
      EXPECT_TRUE(all_close(data_of(y).get(), dt, c.loss, forward_tol(dt)));
      Array gy = make_array(dt, c.gloss);
      backward(y, gy);
      EXPECT_TRUE(all_close(grad_of(x).get(), dt, c.gx, grad_tol(dt)));
      EXPECT_TRUE(all_close(p.grad.get(), dt, c.gW, grad_tol(dt)));
      EXPECT_FALSE(grad_of(t)) << "labels get no gradient";
      backward(y, gy);  // gW accumulates
      std::vector<double> twice(c.gW.data, c.gW.data + c.gW.size);
      for (double& v : twice) v *= 2;
      EXPECT_TRUE(all_close(p.grad, dt, shape_of(c.gW), twice, grad_tol(dt)));
    }
}

TEST_F(HSMTest, CheckBackward) {
  for (const RefCase& c : kCases)
    for (ch_dtype dt : {CH_FLOAT64, CH_FLOAT32}) {
      SCOPED_TRACE(std::string(c.name) + " " + ch_dtype_name(dt));
      const CheckTol tol = check_tol(dt);
      Func f = make_hsm(dt, c);
      Array x = make_array(dt, c.x), t = make_array(CH_INT32, c.t), gy = make_array(dt, c.gloss);
      ch_array* xs[2] = {x.get(), t.get()};
      ch_array* gys[1] = {gy.get()};
      EXPECT_EQ(ch_check_backward(f.get(), xs, 2, gys, 1, tol.eps, tol.atol, tol.rtol), CH_OK)
          << ch_error_message();
      EXPECT_TRUE(param_grad_matches_numerical(f, {&x, &t}, gy, 0, tol));
    }
}

// P(w | x) over all words of the tree sums to 1 (each internal node splits
// its probability between its children): sum_w exp(-loss(x, w)) = 1.
TEST_F(HSMTest, ProbabilitiesSumToOne) {
  for (const RefCase& c : kCases) {
    SCOPED_TRACE(c.name);
    Func f = make_hsm(CH_FLOAT64, c);
    const int64_t n_words = c.n_internal + 1, d = c.W.shape[1];
    std::vector<double> x1(c.x.data, c.x.data + d);  // the first sample
    double total = 0;
    for (int64_t w = 0; w < n_words; ++w) {
      Var x = make_var(CH_FLOAT64, {1, d}, x1),
          t = make_var(CH_INT32, {1}, {static_cast<double>(w)});
      Var y;
      ASSERT_EQ(apply2(f, x, t, y), CH_OK) << ch_error_message();
      total += std::exp(-values_of(y)[0]);
    }
    EXPECT_NEAR(total, 1.0, 1e-14);
  }
}

TEST_F(HSMTest, HuffmanTreeMatchesChainer) {
  struct H {
    const double* counts;
    int64_t n;
    const int32_t* tree;
  };
  const H hs[] = {{hsm_ref::h7_counts, 7, hsm_ref::h7_tree},
                  {hsm_ref::h2_counts, 2, hsm_ref::h2_tree},
                  {hsm_ref::h6_counts, 6, hsm_ref::h6_tree}};
  for (const H& h : hs) {
    SCOPED_TRACE(h.n);
    std::vector<int32_t> tree(static_cast<size_t>(2 * (h.n - 1)), 99);
    ASSERT_EQ(ch_functions_binary_hierarchical_softmax_create_huffman_tree(
                  tree.data(), static_cast<int64_t>(tree.size()), h.counts, h.n),
              CH_OK)
        << ch_error_message();
    EXPECT_EQ(tree, std::vector<int32_t>(h.tree, h.tree + tree.size()));
    Func f;  // the tree is accepted by the constructor
    EXPECT_EQ(ch_functions_binary_hierarchical_softmax_new(f.out(), 3, tree.data(), h.n - 1,
                                                           CH_FLOAT32, nullptr),
              CH_OK)
        << ch_error_message();
  }
}

// Counts 2^w make Huffman's tree a chain as deep as the vocabulary (999
// internal nodes on word 0's path): parsed and evaluated without recursion.
TEST_F(HSMTest, DeepTree) {
  const int64_t n = 1000;
  std::vector<double> counts(static_cast<size_t>(n));
  for (int64_t w = 0; w < n; ++w)
    counts[static_cast<size_t>(w)] = std::ldexp(1.0, static_cast<int>(w));
  std::vector<int32_t> tree(static_cast<size_t>(2 * (n - 1)));
  ASSERT_EQ(ch_functions_binary_hierarchical_softmax_create_huffman_tree(
                tree.data(), static_cast<int64_t>(tree.size()), counts.data(), n),
            CH_OK)
      << ch_error_message();
  Func f;
  ASSERT_EQ(ch_functions_binary_hierarchical_softmax_new(f.out(), 2, tree.data(), n - 1, CH_FLOAT64,
                                                         nullptr),
            CH_OK)
      << ch_error_message();
  Var x = make_var(CH_FLOAT64, {2, 2}, {0.5, -0.5, 0.25, 1}),
      t = make_var(CH_INT32, {2}, {0, n - 1});
  Var y;
  ASSERT_EQ(apply2(f, x, t, y), CH_OK) << ch_error_message();
  EXPECT_TRUE(std::isfinite(values_of(y)[0]));
  EXPECT_GT(values_of(y)[0], 0.0);
}

// Without initial_W: W ~ U(-1, 1) (Chainer 1.0.1's numpy.random.uniform(-1, 1)).
TEST_F(HSMTest, DefaultInitialisationIsUniform) {
  for (ch_dtype dt : {CH_FLOAT32, CH_FLOAT64}) {
    Func f;
    ASSERT_EQ(ch_functions_binary_hierarchical_softmax_new(f.out(), 1000, hsm_ref::small_tree,
                                                           hsm_ref::small_n_internal, dt, nullptr),
              CH_OK)
        << ch_error_message();
    Param p = param_of(f, 0);
    EXPECT_EQ(shape_of(p.param.get()), (Shape{4, 1000}));
    std::vector<double> v = values_of(p.param.get());
    double mean = 0, sq = 0;
    for (double e : v) {
      EXPECT_GE(e, -1.0);
      EXPECT_LE(e, 1.0);
      mean += e;
      sq += e * e;
    }
    mean /= static_cast<double>(v.size());
    EXPECT_LT(std::fabs(mean), 0.05);  // 4000 samples: sd of the mean ~0.009
    EXPECT_NEAR(sq / static_cast<double>(v.size()), 1.0 / 3.0, 0.03);
    EXPECT_TRUE(all_equal(p.grad, dt, {4, 1000}, std::vector<double>(4000, 0.0)));
  }
}

TEST_F(HSMTest, BadInputs) {
  Func f = make_hsm(CH_FLOAT32, kCases[0]);  // words 0..4, in_size 3
  Var x = make_var(iota(CH_FLOAT32, {2, 3}));
  Var y;
  Var t9 = make_var(CH_INT32, {2}, {1, 9});
  EXPECT_TRUE(fails_with(apply2(f, x, t9, y), CH_ERR_INVALID_ARGUMENT, {"label 9", "position 1"}));
  Var tneg = make_var(CH_INT32, {2}, {-1, 0});
  EXPECT_TRUE(
      fails_with(apply2(f, x, tneg, y), CH_ERR_INVALID_ARGUMENT, {"label -1", "position 0"}));
  Var t3 = make_var(CH_INT32, {3}, {0, 1, 2});
  EXPECT_TRUE(fails_with(apply2(f, x, t3, y), CH_ERR_SHAPE, {"(3,)", "(2, 3)"}));
  Var tf = make_var(CH_FLOAT32, {2}, {0, 1});
  EXPECT_TRUE(fails_with(apply2(f, x, tf, y), CH_ERR_DTYPE, {"float32", "int32 expected"}));
  Var t2 = make_var(CH_INT32, {2}, {0, 1});
  Var x4 = make_var(iota(CH_FLOAT32, {2, 4}));
  EXPECT_TRUE(fails_with(apply2(f, x4, t2, y), CH_ERR_SHAPE, {"(2, 4)", "(N, 3)"}));
  Var x1 = make_var(iota(CH_FLOAT32, {6}));
  EXPECT_TRUE(fails_with(apply2(f, x1, t2, y), CH_ERR_SHAPE, {"(6,)"}));
  Var xd = make_var(iota(CH_FLOAT64, {2, 3}));
  EXPECT_TRUE(fails_with(apply2(f, xd, t2, y), CH_ERR_DTYPE, {"float64", "float32"}));
  EXPECT_FALSE(y);

  Func g;
  auto make = [&](const std::vector<int32_t>& tree, int64_t n_internal) {
    return ch_functions_binary_hierarchical_softmax_new(g.out(), 3, tree.data(), n_internal,
                                                        CH_FLOAT64, nullptr);
  };
  EXPECT_TRUE(fails_with(make({-1, -2}, 0), CH_ERR_INVALID_ARGUMENT, {"0 internal nodes"}));
  EXPECT_TRUE(fails_with(make({1, 5, -1, -2}, 2), CH_ERR_INVALID_ARGUMENT,
                         {"internal node 5", "2 internal nodes"}));
  EXPECT_TRUE(fails_with(make({1, 1, -1, -2}, 2), CH_ERR_INVALID_ARGUMENT,
                         {"internal node 1", "reached twice"}));
  EXPECT_TRUE(fails_with(make({1, -3, -1, 0}, 2), CH_ERR_INVALID_ARGUMENT, {"node 1", "root"}));
  EXPECT_TRUE(
      fails_with(make({-1, -2, 2, -3, 1, -4}, 3), CH_ERR_INVALID_ARGUMENT, {"not reachable"}));
  EXPECT_TRUE(
      fails_with(make({1, -1, -1, -2}, 2), CH_ERR_INVALID_ARGUMENT, {"word 0", "more than once"}));
  EXPECT_TRUE(fails_with(
      ch_functions_binary_hierarchical_softmax_new(g.out(), 3, nullptr, 1, CH_FLOAT64, nullptr),
      CH_ERR_INVALID_ARGUMENT, {"tree is NULL"}));
  const int32_t ok[] = {-1, -2};
  EXPECT_TRUE(fails_with(
      ch_functions_binary_hierarchical_softmax_new(g.out(), 0, ok, 1, CH_FLOAT64, nullptr),
      CH_ERR_INVALID_ARGUMENT, {"in_size 0"}));
  EXPECT_TRUE(
      fails_with(ch_functions_binary_hierarchical_softmax_new(g.out(), 3, ok, 1, CH_INT32, nullptr),
                 CH_ERR_DTYPE, {"dtype 2"}));
  Array w = iota(CH_FLOAT64, {2, 3});
  EXPECT_TRUE(fails_with(
      ch_functions_binary_hierarchical_softmax_new(g.out(), 3, ok, 1, CH_FLOAT64, w.get()),
      CH_ERR_SHAPE, {"(2, 3)", "(1, 3)"}));
  EXPECT_FALSE(g);

  std::vector<int32_t> tree(4);
  const double c2[] = {1, 2}, c3[] = {1, NAN, 2};
  EXPECT_TRUE(fails_with(
      ch_functions_binary_hierarchical_softmax_create_huffman_tree(tree.data(), 4, c2, 1),
      CH_ERR_INVALID_ARGUMENT, {"1 words", "at least 2"}));
  EXPECT_TRUE(fails_with(
      ch_functions_binary_hierarchical_softmax_create_huffman_tree(tree.data(), 3, c3, 3),
      CH_ERR_INVALID_ARGUMENT, {"word 1", "NaN"}));
  EXPECT_TRUE(fails_with(
      ch_functions_binary_hierarchical_softmax_create_huffman_tree(tree.data(), 1, c2, 2),
      CH_ERR_INVALID_ARGUMENT, {"capacity 1", "2 entries"}));
  EXPECT_TRUE(
      fails_with(ch_functions_binary_hierarchical_softmax_create_huffman_tree(nullptr, 4, c2, 2),
                 CH_ERR_INVALID_ARGUMENT, {"tree is NULL"}));
  EXPECT_TRUE(fails_with(
      ch_functions_binary_hierarchical_softmax_create_huffman_tree(tree.data(), 4, nullptr, 2),
      CH_ERR_INVALID_ARGUMENT, {"counts is NULL"}));
}

}  // namespace
