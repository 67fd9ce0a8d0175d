// EmbedID (ch_functions_embed_id_new): lookup of W's rows by int32 ids,
// scatter-add backward into gW, Chainer 1.0.1's N(0, 1) initialisation.
#include <cmath>

#include "embed_id_references.h"
#include "rnn_test_util.h"

namespace {

using namespace optest;
using namespace rnntest;

using EmbedIDTest = OpTest;

Func make_embed(ch_dtype dt, const ref::Tensor& W) {
  Array w = make_array(dt, W);
  Func f;
  OPTEST_OK(ch_functions_embed_id_new(f.out(), W.shape[0], W.shape[1], dt, w.get()));
  return f;
}

Var apply1(const Func& f, const Var& x) {
  Var y;
  ch_variable* in[1] = {x.get()};
  OPTEST_OK(ch_function_apply(f.get(), in, 1, y.out(), 1, nullptr));
  return y;
}

struct RefCase {
  const char* name;
  const ref::Tensor &W, &ids, &y, &gy, &gW;
};
const RefCase kCases[] = {
    {"vec", embed_id_ref::vec_W, embed_id_ref::vec_ids, embed_id_ref::vec_y, embed_id_ref::vec_gy,
     embed_id_ref::vec_gW},
    {"mat", embed_id_ref::mat_W, embed_id_ref::mat_ids, embed_id_ref::mat_y, embed_id_ref::mat_gy,
     embed_id_ref::mat_gW},
};

TEST_F(EmbedIDTest, ForwardAndBackwardMatchNumPy) {
  for (const RefCase& c : kCases)
    for (ch_dtype dt : {CH_FLOAT64, CH_FLOAT32}) {
      SCOPED_TRACE(std::string(c.name) + " " + ch_dtype_name(dt));
      Func f = make_embed(dt, c.W);
      EXPECT_STREQ(ch_function_name(f.get()), "EmbedID");
      ASSERT_EQ(ch_function_parameter_count(f.get()), 1u);
      Param p = param_of(f, 0);
      EXPECT_EQ(p.name, "W");
      EXPECT_TRUE(all_close(p.param.get(), dt, c.W, Tol{0, 0}));
      EXPECT_TRUE(
          all_close(p.grad, dt, shape_of(c.W), std::vector<double>(c.W.size, 0.0), Tol{0, 0}));
      Var x = make_var(make_array(CH_INT32, c.ids));
      Var y = apply1(f, x);
      EXPECT_TRUE(all_close(data_of(y).get(), dt, c.y, Tol{0, 0}));  // rows are copied exactly
      Array gy = make_array(dt, c.gy);
      backward(y, gy);
      EXPECT_TRUE(all_close(p.grad.get(), dt, c.gW, grad_tol(dt)));
      EXPECT_FALSE(grad_of(x)) << "the ids must get no gradient";
      // A second backward accumulates into gW (Chainer 1.x: gW += ...).
      backward(y, gy);
      std::vector<double> twice(c.gW.data, c.gW.data + c.gW.size);
      for (double& v : twice) v *= 2;
      EXPECT_TRUE(all_close(p.grad, dt, shape_of(c.gW), twice, grad_tol(dt)));
    }
}

// gW from backward against ch_numerical_grad of sum(gy * EmbedID(ids)) in W.
TEST_F(EmbedIDTest, CheckBackwardOfW) {
  for (const RefCase& c : kCases)
    for (ch_dtype dt : {CH_FLOAT64, CH_FLOAT32}) {
      SCOPED_TRACE(std::string(c.name) + " " + ch_dtype_name(dt));
      Func f = make_embed(dt, c.W);
      Array ids = make_array(CH_INT32, c.ids);
      Array gy = make_array(dt, c.gy);
      EXPECT_TRUE(param_grad_matches_numerical(f, {&ids}, gy, 0, check_tol(dt)));
      // ch_check_backward skips int32 inputs: it must accept the function.
      ch_array* xs[1] = {ids.get()};
      ch_array* gys[1] = {gy.get()};
      const CheckTol t = check_tol(dt);
      EXPECT_EQ(ch_check_backward(f.get(), xs, 1, gys, 1, t.eps, t.atol, t.rtol), CH_OK)
          << ch_error_message();
    }
}

// Two applications of one object share W and accumulate into one gW.
TEST_F(EmbedIDTest, ApplicationsShareParameters) {
  Func f = make_embed(CH_FLOAT64, embed_id_ref::vec_W);
  Var x1 = make_var(CH_INT32, {1}, {2});
  Var x2 = make_var(CH_INT32, {2}, {2, 4});
  Var y1 = apply1(f, x1), y2 = apply1(f, x2);
  backward(y1, make_array(CH_FLOAT64, {1, 3}, {1, 2, 3}));
  backward(y2, make_array(CH_FLOAT64, {2, 3}, {10, 20, 30, 100, 200, 300}));
  std::vector<double> expected(15, 0.0);
  for (int j = 0; j < 3; ++j) {
    expected[2 * 3 + j] = (j + 1) * 11.0;
    expected[4 * 3 + j] = (j + 1) * 100.0;
  }
  EXPECT_TRUE(all_equal(param_of(f, 0).grad, CH_FLOAT64, {5, 3}, expected));
}

// Without initial_W: W ~ N(0, 1) (Chainer 1.0.1's numpy.random.randn).
TEST_F(EmbedIDTest, DefaultInitialisationIsStandardNormal) {
  for (ch_dtype dt : {CH_FLOAT32, CH_FLOAT64}) {
    Func f;
    ASSERT_EQ(ch_functions_embed_id_new(f.out(), 200, 50, dt, nullptr), CH_OK)
        << ch_error_message();
    Param p = param_of(f, 0);
    EXPECT_EQ(shape_of(p.param.get()), (Shape{200, 50}));
    EXPECT_EQ(ch_array_dtype(p.param.get()), dt);
    std::vector<double> v = values_of(p.param.get());
    double mean = 0, sq = 0;
    for (double e : v) mean += e;
    mean /= static_cast<double>(v.size());
    for (double e : v) sq += (e - mean) * (e - mean);
    const double sd = std::sqrt(sq / static_cast<double>(v.size()));
    EXPECT_LT(std::fabs(mean), 0.05);  // 10000 samples: sd of the mean is 0.01
    EXPECT_NEAR(sd, 1.0, 0.05);
    EXPECT_TRUE(all_equal(p.grad, dt, {200, 50}, std::vector<double>(10000, 0.0)));
  }
}

TEST_F(EmbedIDTest, BadInputs) {
  Func f = make_embed(CH_FLOAT32, embed_id_ref::vec_W);  // in_size 5
  Var y;
  ch_variable* in[2];
  Var hi = make_var(CH_INT32, {3}, {0, 1, 5});
  in[0] = hi.get();
  EXPECT_TRUE(fails_with(ch_function_apply(f.get(), in, 1, y.out(), 1, nullptr),
                         CH_ERR_INVALID_ARGUMENT, {"id 5", "(2,)", "[0, 5)"}));
  Var neg = make_var(CH_INT32, {2, 2}, {0, 1, -1, 2});
  in[0] = neg.get();
  EXPECT_TRUE(fails_with(ch_function_apply(f.get(), in, 1, y.out(), 1, nullptr),
                         CH_ERR_INVALID_ARGUMENT, {"id -1", "(1, 0)"}));
  Var fl = make_var(CH_FLOAT32, {2}, {0, 1});
  in[0] = fl.get();
  EXPECT_TRUE(fails_with(ch_function_apply(f.get(), in, 1, y.out(), 1, nullptr), CH_ERR_DTYPE,
                         {"float32", "int32 expected"}));
  Var ok = make_var(CH_INT32, {1}, {0});
  in[0] = ok.get();
  in[1] = ok.get();
  EXPECT_TRUE(fails_with(ch_function_apply(f.get(), in, 2, y.out(), 1, nullptr),
                         CH_ERR_INVALID_ARGUMENT, {"1 input", "got 2"}));
  EXPECT_FALSE(y);

  Func g;
  EXPECT_TRUE(fails_with(ch_functions_embed_id_new(g.out(), 0, 3, CH_FLOAT32, nullptr),
                         CH_ERR_INVALID_ARGUMENT, {"in_size 0"}));
  EXPECT_TRUE(fails_with(ch_functions_embed_id_new(g.out(), 4, -2, CH_FLOAT32, nullptr),
                         CH_ERR_INVALID_ARGUMENT, {"out_size -2"}));
  EXPECT_TRUE(fails_with(ch_functions_embed_id_new(g.out(), 4, 3, CH_INT32, nullptr), CH_ERR_DTYPE,
                         {"dtype 2"}));
  Array w = iota(CH_FLOAT32, {4, 2});
  EXPECT_TRUE(fails_with(ch_functions_embed_id_new(g.out(), 4, 3, CH_FLOAT32, w.get()),
                         CH_ERR_SHAPE, {"(4, 2)", "(4, 3)"}));
  EXPECT_TRUE(fails_with(ch_functions_embed_id_new(g.out(), 4, 2, CH_FLOAT64, w.get()),
                         CH_ERR_SHAPE, {"float32", "float64"}));
  EXPECT_TRUE(fails_with(ch_functions_embed_id_new(nullptr, 4, 2, CH_FLOAT64, nullptr),
                         CH_ERR_INVALID_ARGUMENT));
  EXPECT_FALSE(g);
}

// The initial_W array is copied: changing it later does not change W.
TEST_F(EmbedIDTest, InitialWIsCopied) {
  Array w = make_array(CH_FLOAT64, {2, 2}, {1, 2, 3, 4});
  Func f;
  ASSERT_EQ(ch_functions_embed_id_new(f.out(), 2, 2, CH_FLOAT64, w.get()), CH_OK)
      << ch_error_message();
  OPTEST_OK(ch_array_fill(w.get(), 7.0));
  EXPECT_TRUE(all_equal(param_of(f, 0).param, CH_FLOAT64, {2, 2}, {1, 2, 3, 4}));
}

// Enough ids for the threaded loops: rows copied exactly, and gW's rows are
// the sums of the gy rows of each id (computed here; dyadic values, exact).
TEST_F(EmbedIDTest, LargeBatch) {
  const int64_t in = 50, out = 64, n = 3000;
  std::vector<double> w(static_cast<size_t>(in * out)), ids(static_cast<size_t>(n)),
      gy(static_cast<size_t>(n * out));
  for (size_t k = 0; k < w.size(); ++k) w[k] = large_a(static_cast<int64_t>(k));
  for (int64_t k = 0; k < n; ++k) ids[static_cast<size_t>(k)] = static_cast<double>((k * 7) % in);
  for (size_t k = 0; k < gy.size(); ++k) gy[k] = large_b(static_cast<int64_t>(k));
  std::vector<double> y(static_cast<size_t>(n * out)), gw(w.size(), 0.0);
  for (int64_t k = 0; k < n; ++k)
    for (int64_t j = 0; j < out; ++j) {
      const int64_t id = static_cast<int64_t>(ids[static_cast<size_t>(k)]);
      y[static_cast<size_t>(k * out + j)] = w[static_cast<size_t>(id * out + j)];
      gw[static_cast<size_t>(id * out + j)] += gy[static_cast<size_t>(k * out + j)];
    }
  for (ch_dtype dt : {CH_FLOAT64, CH_FLOAT32}) {
    SCOPED_TRACE(ch_dtype_name(dt));
    Array wa = make_array(dt, {in, out}, w);
    Func f;
    OPTEST_OK(ch_functions_embed_id_new(f.out(), in, out, dt, wa.get()));
    Var x = make_var(CH_INT32, {n}, ids);
    Var v = apply1(f, x);
    EXPECT_TRUE(all_equal(data_of(v), dt, {n, out}, y));
    backward(v, make_array(dt, {n, out}, gy));
    EXPECT_TRUE(all_equal(param_of(f, 0).grad, dt, {in, out}, gw));
  }
}

}  // namespace
