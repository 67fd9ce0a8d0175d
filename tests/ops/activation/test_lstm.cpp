// lstm (ch_functions_lstm): Chainer 1.0.1's LSTM activation with the gates
// interleaved along axis 1; two outputs (c, h), gradients through either.
#include "lstm_references.h"
#include "op_test_util.h"

namespace {

using namespace optest;

using LSTMTest = OpTest;

struct Gates {
  const ref::Tensor &gc_prev, &gx;
};
struct RefCase {
  const char* name;
  const ref::Tensor &c_prev, &x, &c, &h, &gc, &gh;
  Gates both, only_h, only_c;
};
#define LSTM_CASE(p)                                                                               \
  RefCase {                                                                                        \
#p, lstm_ref::p##_c_prev, lstm_ref::p##_x, lstm_ref::p##_c, lstm_ref::p##_h, lstm_ref::p##_gc, \
        lstm_ref::p##_gh,                                                                          \
        {lstm_ref::p##_both_gc_prev, lstm_ref::p##_both_gx },                                      \
         {lstm_ref::p##_only_h_gc_prev, lstm_ref::p##_only_h_gx },                                 \
          {lstm_ref::p##_only_c_gc_prev, lstm_ref::p##_only_c_gx },                                \
  }
const RefCase kCases[] = {LSTM_CASE(mat), LSTM_CASE(img)};

struct Out {
  Var c, h;
};
Out run(const Var& c_prev, const Var& x) {
  Out o;
  OPTEST_OK(ch_functions_lstm(o.c.out(), o.h.out(), c_prev.get(), x.get()));
  return o;
}

TEST_F(LSTMTest, ForwardMatchesNumPy) {
  for (const RefCase& rc : kCases)
    for (ch_dtype dt : {CH_FLOAT64, CH_FLOAT32}) {
      SCOPED_TRACE(std::string(rc.name) + " " + ch_dtype_name(dt));
      Array cp = make_array(dt, rc.c_prev), x = make_array(dt, rc.x);
      Var vc = make_var(cp), vx = make_var(x);
      Out o = run(vc, vx);
      EXPECT_TRUE(all_close(data_of(o.c).get(), dt, rc.c, forward_tol(dt)));
      EXPECT_TRUE(all_close(data_of(o.h).get(), dt, rc.h, forward_tol(dt)));
      EXPECT_EQ(creator_name(o.c), "LSTM");
      EXPECT_EQ(creator_name(o.h), "LSTM");
      EXPECT_TRUE(all_close(cp.get(), dt, rc.c_prev, Tol{0, 0})) << "c_prev changed";
      EXPECT_TRUE(all_close(x.get(), dt, rc.x, Tol{0, 0})) << "x changed";
    }
}

// Gradients with upstream (gc, gh) both given, through a loss
// sum(c * gc) + sum(h * gh).
TEST_F(LSTMTest, BackwardBothOutputsMatchesNumPy) {
  for (const RefCase& rc : kCases)
    for (ch_dtype dt : {CH_FLOAT64, CH_FLOAT32}) {
      SCOPED_TRACE(std::string(rc.name) + " " + ch_dtype_name(dt));
      Var vc = make_var(make_array(dt, rc.c_prev)), vx = make_var(make_array(dt, rc.x));
      Var gc = make_var(make_array(dt, rc.gc)), gh = make_var(make_array(dt, rc.gh));
      Out o = run(vc, vx);
      Var lc, lh, sc, sh, loss;
      OPTEST_OK(ch_functions_mul(lc.out(), o.c.get(), gc.get()));
      OPTEST_OK(ch_functions_mul(lh.out(), o.h.get(), gh.get()));
      OPTEST_OK(ch_functions_sum(sc.out(), lc.get()));
      OPTEST_OK(ch_functions_sum(sh.out(), lh.get()));
      OPTEST_OK(ch_functions_add(loss.out(), sc.get(), sh.get()));
      backward(loss, Array());
      EXPECT_TRUE(all_close(grad_of(vc).get(), dt, rc.both.gc_prev, grad_tol(dt)));
      EXPECT_TRUE(all_close(grad_of(vx).get(), dt, rc.both.gx, grad_tol(dt)));
    }
}

// Backward from h alone (c's gradient is missing: zeros) and from c alone.
TEST_F(LSTMTest, BackwardOneOutputMatchesNumPy) {
  for (const RefCase& rc : kCases)
    for (ch_dtype dt : {CH_FLOAT64, CH_FLOAT32})
      for (bool from_h : {true, false}) {
        SCOPED_TRACE(std::string(rc.name) + " " + ch_dtype_name(dt) +
                     (from_h ? " from h" : " from c"));
        Var vc = make_var(make_array(dt, rc.c_prev)), vx = make_var(make_array(dt, rc.x));
        Out o = run(vc, vx);
        const Gates& g = from_h ? rc.only_h : rc.only_c;
        Array gy = make_array(dt, from_h ? rc.gh : rc.gc);
        backward(from_h ? o.h : o.c, gy);
        EXPECT_TRUE(all_close(grad_of(vc).get(), dt, g.gc_prev, grad_tol(dt)));
        EXPECT_TRUE(all_close(grad_of(vx).get(), dt, g.gx, grad_tol(dt)));
        EXPECT_TRUE(all_close(gy.get(), dt, from_h ? rc.gh : rc.gc, Tol{0, 0}))
            << "backward modified gy";
      }
}

// Builds (c, h) = lstm(inputs[0], inputs[1]) for ch_check_backward_graph.
ch_status build_lstm(void*, ch_variable* const* in, size_t, ch_variable** out, size_t n_out) {
  if (n_out != 2) return CH_ERR_INVALID_ARGUMENT;
  return ch_functions_lstm(&out[0], &out[1], in[0], in[1]);
}
// Builds c or h alone (user_data: the index of the output kept).
ch_status build_lstm_one(void* which, ch_variable* const* in, size_t, ch_variable** out, size_t) {
  ch_variable *c = nullptr, *h = nullptr;
  ch_status st = ch_functions_lstm(&c, &h, in[0], in[1]);
  if (st != CH_OK) return st;
  const bool keep_h = *static_cast<int*>(which) == 1;
  out[0] = keep_h ? h : c;
  ch_variable_release(keep_h ? c : h);
  return CH_OK;
}

TEST_F(LSTMTest, CheckBackward) {
  for (const RefCase& rc : kCases)
    for (ch_dtype dt : {CH_FLOAT64, CH_FLOAT32}) {
      SCOPED_TRACE(std::string(rc.name) + " " + ch_dtype_name(dt));
      const CheckTol t = check_tol(dt);
      Array cp = make_array(dt, rc.c_prev), x = make_array(dt, rc.x);
      Array gc = make_array(dt, rc.gc), gh = make_array(dt, rc.gh);
      ch_array* xs[2] = {cp.get(), x.get()};
      ch_array* gys[2] = {gc.get(), gh.get()};
      EXPECT_EQ(ch_check_backward_graph(build_lstm, nullptr, xs, 2, gys, 2, t.eps, t.atol, t.rtol),
                CH_OK)
          << ch_error_message();
      for (int which : {0, 1}) {
        ch_array* gy1[1] = {which ? gh.get() : gc.get()};
        EXPECT_EQ(
            ch_check_backward_graph(build_lstm_one, &which, xs, 2, gy1, 1, t.eps, t.atol, t.rtol),
            CH_OK)
            << (which ? "h only: " : "c only: ") << ch_error_message();
      }
    }
}

// A batch large enough for the threaded loops gives, row by row, what the
// same rows give alone (the single-threaded path), forward and backward.
TEST_F(LSTMTest, LargeBatchEqualsRowByRow) {
  const int64_t n = 48, u = 700;
  std::vector<double> c(static_cast<size_t>(n * u)), x(static_cast<size_t>(n * 4 * u));
  for (size_t k = 0; k < c.size(); ++k) c[k] = large_a(static_cast<int64_t>(k)) / 2;
  for (size_t k = 0; k < x.size(); ++k) x[k] = large_b(static_cast<int64_t>(k));
  Var vc = make_var(CH_FLOAT64, {n, u}, c), vx = make_var(CH_FLOAT64, {n, 4 * u}, x);
  Out o = run(vc, vx);
  backward(o.h, make_array(CH_FLOAT64, {n, u}, c));  // any upstream gradient; c's values reused
  const std::vector<double> bc = values_of(o.c), bh = values_of(o.h);
  const std::vector<double> bgc = values_of(grad_of(vc).get()), bgx = values_of(grad_of(vx).get());
  for (int64_t r : {int64_t{0}, int64_t{17}, n - 1}) {
    SCOPED_TRACE("row " + std::to_string(r));
    std::vector<double> rc(c.begin() + r * u, c.begin() + (r + 1) * u);
    std::vector<double> rx(x.begin() + r * 4 * u, x.begin() + (r + 1) * 4 * u);
    Var sc = make_var(CH_FLOAT64, {1, u}, rc), sx = make_var(CH_FLOAT64, {1, 4 * u}, rx);
    Out s = run(sc, sx);
    backward(s.h, make_array(CH_FLOAT64, {1, u}, rc));
    const Tol tol{1e-15, 1e-15};
    auto slice = [](const std::vector<double>& v, int64_t b, int64_t e) {
      return std::vector<double>(v.begin() + b, v.begin() + e);
    };
    EXPECT_TRUE(all_close(data_of(s.c), CH_FLOAT64, {1, u}, slice(bc, r * u, (r + 1) * u), tol));
    EXPECT_TRUE(all_close(data_of(s.h), CH_FLOAT64, {1, u}, slice(bh, r * u, (r + 1) * u), tol));
    EXPECT_TRUE(all_close(grad_of(sc), CH_FLOAT64, {1, u}, slice(bgc, r * u, (r + 1) * u), tol));
    EXPECT_TRUE(all_close(grad_of(sx), CH_FLOAT64, {1, 4 * u},
                          slice(bgx, r * 4 * u, (r + 1) * 4 * u), tol));
  }
}

TEST_F(LSTMTest, BadInputs) {
  Var c23 = make_var(iota(CH_FLOAT32, {2, 3}));
  Var x28 = make_var(iota(CH_FLOAT32, {2, 8}));
  Var x212 = make_var(iota(CH_FLOAT32, {2, 12}));
  Var x312 = make_var(iota(CH_FLOAT32, {3, 12}));
  Var x2123 = make_var(iota(CH_FLOAT32, {2, 12, 1}));
  Var c6 = make_var(iota(CH_FLOAT32, {6}));
  Var x24 = make_var(iota(CH_FLOAT32, {24}));
  Var d212 = make_var(iota(CH_FLOAT64, {2, 12}));
  Var i23 = make_var(iota(CH_INT32, {2, 3}));
  Var i212 = make_var(iota(CH_INT32, {2, 12}));
  Var c, h;
  EXPECT_TRUE(fails_with(ch_functions_lstm(c.out(), h.out(), c23.get(), x28.get()), CH_ERR_SHAPE,
                         {"(2, 8)", "(2, 3)", "four times"}));
  EXPECT_TRUE(fails_with(ch_functions_lstm(c.out(), h.out(), c23.get(), x312.get()), CH_ERR_SHAPE,
                         {"(3, 12)", "(2, 3)"}));
  EXPECT_TRUE(fails_with(ch_functions_lstm(c.out(), h.out(), c23.get(), x2123.get()), CH_ERR_SHAPE,
                         {"(2, 12, 1)", "(2, 3)"}));
  EXPECT_TRUE(fails_with(ch_functions_lstm(c.out(), h.out(), c6.get(), x24.get()), CH_ERR_SHAPE,
                         {"(6,)", "(24,)"}));
  EXPECT_TRUE(fails_with(ch_functions_lstm(c.out(), h.out(), c23.get(), d212.get()), CH_ERR_DTYPE,
                         {"float32", "float64"}));
  EXPECT_TRUE(fails_with(ch_functions_lstm(c.out(), h.out(), i23.get(), i212.get()), CH_ERR_DTYPE,
                         {"int32"}));
  EXPECT_TRUE(fails_with(ch_functions_lstm(c.out(), h.out(), nullptr, x212.get()),
                         CH_ERR_NULL_HANDLE, {"c_prev"}));
  EXPECT_TRUE(fails_with(ch_functions_lstm(nullptr, h.out(), c23.get(), x212.get()),
                         CH_ERR_INVALID_ARGUMENT));
  EXPECT_TRUE(fails_with(ch_functions_lstm(c.out(), nullptr, c23.get(), x212.get()),
                         CH_ERR_INVALID_ARGUMENT));
  EXPECT_FALSE(c);
  EXPECT_FALSE(h);
  ASSERT_EQ(ch_functions_lstm(c.out(), h.out(), c23.get(), x212.get()), CH_OK)
      << ch_error_message();
  EXPECT_EQ(shape_of(c), (Shape{2, 3}));
  EXPECT_EQ(shape_of(h), (Shape{2, 3}));
}

}  // namespace
