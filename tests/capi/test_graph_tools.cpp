// ch_variable_graph_dot (the graph as Graphviz DOT, Chainer's
// build_computational_graph) and ch_function_forward (a creator's forward on
// plain arrays, the seed's section 1.4.4 idiom inside numerical_grad).
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "capi_test_util.h"

using namespace capi_test;

namespace {

Var apply1(ch_function* f, std::initializer_list<ch_variable*> xs) {
  std::vector<ch_variable*> in(xs);
  ch_variable* out = nullptr;
  size_t n = 0;
  EXPECT_EQ(ch_function_apply(f, in.data(), in.size(), &out, 1, &n), CH_OK) << ch_error_message();
  EXPECT_EQ(n, 1u);
  return Var(out);
}

Arr data(const ch_variable* v) {
  Arr a;
  EXPECT_EQ(ch_variable_data(a.out(), v), CH_OK) << ch_error_message();
  return a;
}

Arr grad(const ch_variable* v) {
  Arr a;
  EXPECT_EQ(ch_variable_grad(a.out(), v), CH_OK) << ch_error_message();
  return a;
}

Fn creator(const ch_variable* v) {
  Fn f;
  EXPECT_EQ(ch_variable_creator(f.out(), v), CH_OK) << ch_error_message();
  return f;
}

// The outputs of ch_function_forward(f, inputs).
std::vector<Arr> forward(ch_function* f, std::vector<ch_array*> in) {
  ch_array* outs[4] = {};
  size_t n = 0;
  EXPECT_EQ(ch_function_forward(f, in.data(), in.size(), outs, 4, &n), CH_OK) << ch_error_message();
  std::vector<Arr> r;
  for (size_t i = 0; i < n && i < 4; ++i) r.emplace_back(outs[i]);
  return r;
}

size_t count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t p = s.find(what); p != std::string::npos; p = s.find(what, p + 1)) ++n;
  return n;
}

struct Mlp {
  Fn l1, l2;
  Var x, t, h, a, y, loss;
};

// x (4, 3) -> Linear(3, 5) -> ReLU -> Linear(5, 2) -> softmax_cross_entropy(., t)
void build_mlp(Mlp& m) {
  ASSERT_CH_OK(
      ch_functions_linear_new(m.l1.out(), 3, 5, CH_FLOAT32, 1.0, 0.1, 0, nullptr, nullptr));
  ASSERT_CH_OK(
      ch_functions_linear_new(m.l2.out(), 5, 2, CH_FLOAT32, 1.0, 0.1, 0, nullptr, nullptr));
  m.x = var_f32({4, 3}, {0.1, -0.2, 0.3, 0.4, 0.5, -0.6, -0.7, 0.8, 0.9, 1.0, -1.1, 1.2});
  m.t = make_var(make_array(CH_INT32, {4}, {0, 1, 1, 0}));
  m.h = apply1(m.l1, {m.x});
  ASSERT_CH_OK(ch_functions_relu(m.a.out(), m.h));
  m.y = apply1(m.l2, {m.a});
  ASSERT_CH_OK(ch_functions_softmax_cross_entropy(m.loss.out(), m.y, m.t));
}

std::string dot_of(ch_variable* v, const ch_graph_dot_options* opt) {
  char* s = nullptr;
  ch_variable* outs[] = {v};
  EXPECT_EQ(ch_variable_graph_dot(&s, outs, 1, opt), CH_OK) << ch_error_message();
  std::string r = s ? s : "";
  ch_string_free(s);
  return r;
}

class GraphDot : public CapiTest {};
class FunctionForward : public CapiTest {};

TEST_F(GraphDot, MlpHasEveryNodeAndEdgeOnce) {
  Mlp m;
  build_mlp(m);
  const char* names[] = {"loss"};
  ch_graph_dot_options opt{CH_GRAPH_DOT_OPTIONS_VERSION, 0, "LR", names};
  std::string dot = dot_of(m.loss, &opt);
  EXPECT_EQ(dot.rfind("digraph graphname {", 0), 0u) << dot;
  EXPECT_TRUE(contains(dot, "rankdir=LR;")) << dot;
  // 6 variables (x, t, h, relu(h), y, loss), 4 functions, 4 parameters.
  EXPECT_EQ(count(dot, "shape=\"box\""), 4u) << dot;
  EXPECT_EQ(count(dot, "shape=\"oval\""), 10u) << dot;
  EXPECT_EQ(count(dot, "->"), 13u) << dot;  // 5 var->func, 4 func->var, 4 param->func
  EXPECT_EQ(count(dot, "[label=\"Linear\""), 2u) << dot;
  EXPECT_EQ(count(dot, "[label=\"ReLU\""), 1u) << dot;
  EXPECT_EQ(count(dot, "[label=\"SoftmaxCrossEntropy\""), 1u) << dot;
  EXPECT_TRUE(contains(dot, "[label=\"loss\\n(), float32\"")) << dot;
  EXPECT_TRUE(contains(dot, "[label=\"(4, 3), float32\"")) << dot;  // x
  EXPECT_TRUE(contains(dot, "[label=\"(4,), int32\"")) << dot;      // t
  EXPECT_EQ(count(dot, "[label=\"(4, 5), float32\""), 2u) << dot;   // h, relu(h)
  EXPECT_TRUE(contains(dot, "[label=\"W\\n(5, 3), float32\"")) << dot;
  EXPECT_TRUE(contains(dot, "[label=\"W\\n(2, 5), float32\"")) << dot;
  EXPECT_TRUE(contains(dot, "[label=\"b\\n(5,), float32\"")) << dot;
  // The walk numbers nodes from the output: v0 = loss, f0 = its creator.
  EXPECT_TRUE(contains(dot, "  f0 -> v0;")) << dot;
  // Same graph, same text.
  EXPECT_EQ(dot, dot_of(m.loss, &opt));
  // Without parameters: no p-nodes.
  ch_graph_dot_options hide{CH_GRAPH_DOT_OPTIONS_VERSION, 1, nullptr, nullptr};
  std::string bare = dot_of(m.loss, &hide);
  EXPECT_EQ(count(bare, "shape=\"oval\""), 6u) << bare;
  EXPECT_EQ(count(bare, "->"), 9u) << bare;
  EXPECT_TRUE(contains(bare, "rankdir=TB;")) << bare;
}

// The DOT text is valid Graphviz: `dot -Tplain` reads it and lays out every
// node and edge (skipped where Graphviz is not installed).
TEST_F(GraphDot, GraphvizParsesIt) {
  if (std::system("command -v dot >/dev/null 2>&1") != 0) GTEST_SKIP() << "graphviz not installed";
  Mlp m;
  build_mlp(m);
  std::string dot = dot_of(m.loss, nullptr);
  char path[] = "/tmp/ch_graph_XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  FILE* f = fdopen(fd, "w");
  std::fputs(dot.c_str(), f);
  std::fclose(f);
  std::string cmd = std::string("dot -Tplain ") + path + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string plain;
  char buf[4096];
  size_t k;
  while ((k = std::fread(buf, 1, sizeof buf, p)) > 0) plain.append(buf, k);
  int rc = pclose(p);
  std::remove(path);
  ASSERT_EQ(rc, 0) << plain;
  size_t nodes = 0, edges = 0;
  std::istringstream lines(plain);
  for (std::string line; std::getline(lines, line);) {
    nodes += line.rfind("node ", 0) == 0;
    edges += line.rfind("edge ", 0) == 0;
  }
  EXPECT_EQ(nodes, 14u) << plain;
  EXPECT_EQ(edges, 13u) << plain;
}

TEST_F(GraphDot, BadArgumentsSayWhy) {
  Var x = var_f32({2}, {1, 2});
  char* s = nullptr;
  ch_variable* outs[] = {x};
  EXPECT_CH_ERR(CH_ERR_INVALID_ARGUMENT, ch_variable_graph_dot(&s, outs, 0, nullptr));
  EXPECT_CH_ERR(CH_ERR_INVALID_ARGUMENT, ch_variable_graph_dot(nullptr, outs, 1, nullptr));
  ch_graph_dot_options bad{CH_GRAPH_DOT_OPTIONS_VERSION, 0, "sideways", nullptr};
  EXPECT_CH_ERR(CH_ERR_INVALID_ARGUMENT, ch_variable_graph_dot(&s, outs, 1, &bad));
  EXPECT_TRUE(contains(ch_error_message(), "sideways"));
  bad = {99, 0, nullptr, nullptr};
  EXPECT_CH_ERR(CH_ERR_INVALID_ARGUMENT, ch_variable_graph_dot(&s, outs, 1, &bad));
  ch_variable* null_out[] = {nullptr};
  EXPECT_CH_ERR(CH_ERR_NULL_HANDLE, ch_variable_graph_dot(&s, null_out, 1, nullptr));
  EXPECT_EQ(s, nullptr);
  ch_string_free(nullptr);  // no-op
  // A root alone: one variable node, no edge.
  std::string dot = dot_of(x, nullptr);
  EXPECT_EQ(count(dot, "shape=\"oval\""), 1u) << dot;
  EXPECT_EQ(count(dot, "->"), 0u) << dot;
}

// --- forward on arrays ------------------------------------------------------

struct EvalArgs {
  ch_function* f;
  std::vector<ch_array*> inputs;
};

// The seed's `f = lambda: func.forward((x.data,))`.
ch_status eval_forward(void* user_data, ch_context* ctx) {
  auto* a = static_cast<EvalArgs*>(user_data);
  ch_array* outs[1] = {};
  size_t n = 0;
  ch_status st = ch_function_forward(a->f, a->inputs.data(), a->inputs.size(), outs, 1, &n);
  if (st) return st;
  st = ch_context_add_output(ctx, outs[0]);
  ch_array_release(outs[0]);
  return st;
}

// The seed's section 1.4.4 test, for a variable y computed from x (and the
// fixed other inputs): backward, then numerical_grad of creator.forward.
void seed_gradient_check(ch_variable* x, ch_variable* y, std::vector<ch_array*> inputs, double atol,
                         double rtol) {
  Arr yd = data(y);
  std::vector<double> gy = values(yd);
  for (size_t i = 0; i < gy.size(); ++i) gy[i] = 0.5 + 0.25 * static_cast<double>(i % 5);
  Arr gya = make_array(ch_array_dtype(yd), shape_of(yd), gy);
  ASSERT_CH_OK(ch_variable_set_grad(y, gya));
  ASSERT_CH_OK(ch_variable_backward(y, 0));
  Fn func = creator(y);
  EvalArgs args{func, inputs};
  Arr xd = data(x);
  ch_array* in[] = {xd};
  ch_array* gys[] = {gya};
  Arr gx;
  ASSERT_CH_OK(ch_numerical_grad(gx.out(), eval_forward, &args, in, 1, gys, 1, 1e-3));
  Arr xg = grad(x);
  EXPECT_TRUE(AllClose(values(gx), values(xg), atol, rtol));
  // The graph still gives the same gradient after forward ran on arrays.
  ASSERT_CH_OK(ch_variable_backward(y, 0));
  Arr xg2 = grad(x);
  EXPECT_TRUE(AllClose(values(xg2), values(xg), 1e-6, 1e-6));
}

TEST_F(FunctionForward, ReluMatchesTheGraphAndKeepsItsNode) {
  Var x = var_f64({3, 2}, {1.0, -1.0, 0.5, -0.5, 2.0, -2.0});
  Var y;
  ASSERT_CH_OK(ch_functions_relu(y.out(), x));
  Fn f = creator(y);
  Arr xd = data(x);
  std::vector<Arr> out = forward(f, {xd});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(AllClose(values(out[0]), data_of(y)));
  // Forward on other arrays (signs flipped): relu of those...
  Arr other = f64({3, 2}, {-1.0, 1.0, -0.5, 0.5, -2.0, 2.0});
  out = forward(f, {other});
  EXPECT_TRUE(AllClose(values(out[0]), {0, 1, 0, 0.5, 0, 2}));
  // ...and the node still backpropagates as relu of x (its state restored).
  ASSERT_CH_OK(ch_variable_set_grad(y, full(CH_FLOAT64, {3, 2}, 1.0)));
  ASSERT_CH_OK(ch_variable_backward(y, 0));
  EXPECT_TRUE(AllClose(grad_of(x), {1, 0, 1, 0, 1, 0}));
}

TEST_F(FunctionForward, SeedIdiomRelu) {
  Var x = var_f32({3, 2}, {0.3, -0.7, 1.1, -0.2, 0.6, -1.4});
  Var y;
  ASSERT_CH_OK(ch_functions_relu(y.out(), x));
  Arr xd = data(x);
  seed_gradient_check(x, y, {xd}, 1e-3, 1e-3);
}

TEST_F(FunctionForward, SeedIdiomLinear) {
  Fn l;
  ASSERT_CH_OK(ch_functions_linear_new(l.out(), 3, 2, CH_FLOAT64, 1.0, 0.2, 0, nullptr, nullptr));
  Var x = var_f64({2, 3}, {0.1, -0.2, 0.3, 0.4, 0.5, -0.6});
  Var y = apply1(l, {x});
  Fn f = creator(y);
  Arr xd = data(x);
  std::vector<Arr> out = forward(f, {xd});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(AllClose(values(out[0]), data_of(y)));
  seed_gradient_check(x, y, {xd}, 1e-7, 1e-6);
}

TEST_F(FunctionForward, SeedIdiomSoftmaxCrossEntropy) {
  Var x = var_f64({3, 4}, {0.1, -0.2, 0.3, 0.4, 0.5, -0.6, 0.7, 0.8, -0.9, 1.0, 0.2, -0.3});
  Var t = make_var(make_array(CH_INT32, {3}, {1, 3, 0}));
  Var loss;
  ASSERT_CH_OK(ch_functions_softmax_cross_entropy(loss.out(), x, t));
  Fn f = creator(loss);
  Arr xd = data(x), td = data(t);
  std::vector<Arr> out = forward(f, {xd, td});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(AllClose(values(out[0]), data_of(loss)));
  seed_gradient_check(x, loss, {xd, td}, 1e-7, 1e-6);
}

TEST_F(FunctionForward, SeedIdiomConvolution) {
  Fn conv;
  ASSERT_CH_OK(ch_functions_convolution_2d_new(conv.out(), 2, 3, 3, 3, 1, 1, 1, 1, CH_FLOAT64, 1.0,
                                               0.1, 0, nullptr, nullptr));
  std::vector<double> xv(1 * 2 * 4 * 4);
  for (size_t i = 0; i < xv.size(); ++i) xv[i] = std::sin(0.7 * static_cast<double>(i));
  Var x = var_f64({1, 2, 4, 4}, xv);
  Var y = apply1(conv, {x});
  Var p;
  ASSERT_CH_OK(ch_functions_max_pooling_2d(p.out(), y, 2, 2, 2, 2, 0, 0, 1));
  Fn fy = creator(y);
  Arr xd = data(x);
  std::vector<Arr> out = forward(fy, {xd});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(AllClose(values(out[0]), data_of(y)));
  seed_gradient_check(x, y, {xd}, 1e-7, 1e-6);
  // Max pooling's forward on its recorded input's data gives its output.
  Fn fp = creator(p);
  Arr yd = data(y);
  out = forward(fp, {yd});
  EXPECT_TRUE(AllClose(values(out[0]), data_of(p)));
}

TEST_F(FunctionForward, RefusalsSayWhy) {
  Var x = var_f32({2, 2}, {1, -1, 2, -2});
  Var y;
  ASSERT_CH_OK(ch_functions_relu(y.out(), x));
  Fn f = creator(y);
  Arr xd = data(x);
  ch_array* two[] = {xd, xd};
  ch_array* out[1] = {};
  EXPECT_CH_ERR(CH_ERR_INVALID_ARGUMENT, ch_function_forward(f, two, 2, out, 1, nullptr));
  EXPECT_TRUE(contains(ch_error_message(), "takes 1 input, got 2")) << ch_error_message();
  ch_array* none[] = {nullptr};
  EXPECT_CH_ERR(CH_ERR_NULL_HANDLE, ch_function_forward(f, none, 1, out, 1, nullptr));
  EXPECT_CH_ERR(CH_ERR_NULL_HANDLE, ch_function_forward(nullptr, two, 1, out, 1, nullptr));
  // A live dropout node: a new mask would change its backward.
  Var d;
  ASSERT_CH_OK(ch_functions_dropout(d.out(), x, 0.5, 1));
  Fn fd = creator(d);
  EXPECT_CH_ERR(CH_ERR_GRAPH, ch_function_forward(fd, two, 1, out, 1, nullptr));
  EXPECT_TRUE(contains(ch_error_message(), "Dropout")) << ch_error_message();
  EXPECT_EQ(out[0], nullptr);
  // Once its graph is gone nothing reads its state: it runs.
  d.reset();
  std::vector<Arr> o = forward(fd, {xd});
  ASSERT_EQ(o.size(), 1u);
  EXPECT_EQ(shape_of(o[0]), (std::vector<int64_t>{2, 2}));
}

}  // namespace
