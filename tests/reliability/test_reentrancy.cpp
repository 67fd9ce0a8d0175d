// Callbacks that re-enter the library while it is changing the very thing
// they touch (issue 48), through the public C API:
//  - a wrapped buffer's release callback that sets the gradient of the
//    variable whose gradient assignment is letting that buffer go (the leak
//    fuzz_reentry found: a reference taken by the nested assignment was
//    overwritten by the outer one, so a buffer was never freed), directly,
//    through the backward engine's accumulation, and a release callback that
//    unchains the node whose saved inputs are being let go;
//  - a backward started from inside a backward callback
//    (ch_variable_backward, ch_grad): on a graph of its own it gives what
//    the same computation gives outside any callback; where it would reach
//    what the outer pass is still summing it fails with CH_ERR_GRAPH and
//    leaves the outer gradients as a pass without it computes them.
// Each release callback must run exactly once, and the fixture checks that
// the live handle counts return to where they were (LeakSanitizer, in the
// sanitizer pass, that no buffer stays behind).
#include <string>
#include <vector>

#include "capi_test_util.h"

using namespace capi_test;

namespace {

class Reentrancy : public CapiTest {};

// A wrapped float32 buffer of one element, whose release callback counts
// itself and may set `target`'s gradient to `grad` (both borrowed).
struct Wrapped {
  float value[1] = {0};
  int releases = 0;
  ch_variable* target = nullptr;
  ch_array* grad = nullptr;
  ch_status status = CH_OK;  // of the callback's ch_variable_set_grad
  int set_grad_calls = 0;
};

void count_and_set_grad(void*, void* user) {
  auto* w = static_cast<Wrapped*>(user);
  ++w->releases;
  if (w->target) {
    ++w->set_grad_calls;
    w->status = ch_variable_set_grad(w->target, w->grad);
  }
}

Arr wrap(Wrapped& w, float value) {
  w.value[0] = value;
  const int64_t shape[1] = {1};
  Arr a;
  EXPECT_CH_OK(
      ch_array_wrap(a.out(), CH_FLOAT32, shape, 1, w.value, cpu(), count_and_set_grad, &w));
  return a;
}

// ---- a release callback inside a gradient assignment ----------------------

// g1 is the gradient of v and nothing else holds it. Setting v's gradient to
// `outer` lets g1 go, and g1's release callback sets v's gradient to
// `inner`: the nested assignment comes last, so it is the gradient v keeps,
// and every buffer is freed once the handles go.
void set_grad_inside_release(bool inner_is_outer) {
  Wrapped w1, w2, w3;
  Var v = var_f32({1}, {0});
  Arr g1 = wrap(w1, 1), g2 = wrap(w2, 2), g3 = wrap(w3, 3);
  ASSERT_CH_OK(ch_variable_set_grad(v, g1));
  g1.reset();
  ASSERT_EQ(w1.releases, 0);  // v's gradient holds it
  w1.target = v;
  w1.grad = inner_is_outer ? g3.get() : g2.get();
  ASSERT_CH_OK(ch_variable_set_grad(v, g3));
  EXPECT_EQ(w1.releases, 1);
  EXPECT_EQ(w1.set_grad_calls, 1);
  EXPECT_EQ(w1.status, CH_OK) << ch_error_message();
  EXPECT_TRUE(AllClose(grad_of(v), {inner_is_outer ? 3.0 : 2.0}));
  g2.reset();
  g3.reset();
  v.reset();
  EXPECT_EQ(w1.releases, 1);
  EXPECT_EQ(w2.releases, 1);
  EXPECT_EQ(w3.releases, 1);
}

TEST_F(Reentrancy, ReleaseOfTheReplacedGradSetsAnotherGrad) { set_grad_inside_release(false); }

// fuzz_reentry's input (tests/fuzz/corpus/reentry/leak-set-grad-in-grad-release):
// the nested call sets the very array the outer call is storing.
TEST_F(Reentrancy, ReleaseOfTheReplacedGradSetsTheSameGrad) { set_grad_inside_release(true); }

// Clearing the gradient (NULL) lets it go the same way.
TEST_F(Reentrancy, ReleaseOfTheClearedGradSetsAGrad) {
  Wrapped w1, w2;
  Var v = var_f32({1}, {0});
  Arr g1 = wrap(w1, 1), g2 = wrap(w2, 2);
  ASSERT_CH_OK(ch_variable_set_grad(v, g1));
  g1.reset();
  w1.target = v;
  w1.grad = g2;
  ASSERT_CH_OK(ch_variable_set_grad(v, nullptr));
  EXPECT_EQ(w1.releases, 1);
  EXPECT_EQ(w1.status, CH_OK) << ch_error_message();
  EXPECT_TRUE(AllClose(grad_of(v), {2}));
  g2.reset();
  v.reset();
  EXPECT_EQ(w2.releases, 1);
}

// The backward engine replaces a gradient the user set (it does not add to
// it); letting that one go runs its callback, which sets the gradient
// again. The callback's assignment comes last and is kept; nothing leaks.
TEST_F(Reentrancy, ReleaseOfAGradReplacedByBackwardSetsAGrad) {
  Wrapped w1, w2;
  Var x = var_f32({1}, {4});
  Arr g1 = wrap(w1, 1), g2 = wrap(w2, 7);
  ASSERT_CH_OK(ch_variable_set_grad(x, g1));
  g1.reset();
  w1.target = x;
  w1.grad = g2;
  Var z;
  ASSERT_CH_OK(ch_functions_sum(z.out(), x));  // dz/dx = 1, x's only gradient
  ASSERT_CH_OK(ch_variable_backward(z, 0));
  EXPECT_EQ(w1.releases, 1);
  EXPECT_EQ(w1.status, CH_OK) << ch_error_message();
  EXPECT_TRUE(AllClose(grad_of(x), {7}));
  // Without the callback the pass's own gradient is kept (the reference).
  w1.target = nullptr;
  ASSERT_CH_OK(ch_variable_backward(z, 0));
  EXPECT_TRUE(AllClose(grad_of(x), {1}));
  g2.reset();
  x.reset();
  z.reset();
  EXPECT_EQ(w2.releases, 1);
}

// ---- a release callback inside ch_function_unchain ------------------------

ch_status copy_first(void*, ch_context* ctx, ch_array* const* in, size_t) {
  ch_array* y = nullptr;
  ch_status st = ch_array_copy(&y, in[0]);
  if (st != CH_OK) return st;
  st = ch_context_add_output(ctx, y);
  ch_array_release(y);
  return st;
}

ch_status pass_gy(void*, ch_context* ctx, ch_array* const*, size_t, ch_array* const*, size_t,
                  ch_array* const* gy, size_t) {
  return ch_context_set_grad_input(ctx, 0, gy[0]);
}

struct Unchainer {
  int releases = 0;
  ch_function* node = nullptr;  // borrowed
  ch_status status = CH_OK;
};

void unchain_on_release(void*, void* user) {
  auto* u = static_cast<Unchainer*>(user);
  ++u->releases;
  if (u->node) u->status = ch_function_unchain(u->node);
}

// A node whose saved inputs hold the last references to two wrapped buffers;
// unchaining it lets them go, and the first one's callback unchains the same
// node again (before: the saved arrays were destroyed twice).
TEST_F(Reentrancy, ReleaseOfASavedInputUnchainsTheNode) {
  static float d1[2] = {1, 2}, d2[2] = {3, 4};
  Unchainer u1, u2;
  const int64_t shape[1] = {2};
  Arr a1, a2;
  ASSERT_CH_OK(ch_array_wrap(a1.out(), CH_FLOAT32, shape, 1, d1, cpu(), unchain_on_release, &u1));
  ASSERT_CH_OK(ch_array_wrap(a2.out(), CH_FLOAT32, shape, 1, d2, cpu(), unchain_on_release, &u2));
  Var x1 = make_var(a1), x2 = make_var(a2);
  a1.reset();
  a2.reset();
  ch_function_def def = {};
  def.version = CH_FUNCTION_DEF_VERSION;
  def.name = "copy_first";
  def.forward = copy_first;
  def.backward = pass_gy;
  Fn f;
  ASSERT_CH_OK(ch_function_new(f.out(), &def));
  ch_variable* in[2] = {x1, x2};
  ch_variable* out[1] = {nullptr};
  size_t n_out = 0;
  ASSERT_CH_OK(ch_function_apply(f, in, 2, out, 1, &n_out));
  ASSERT_EQ(n_out, 1u);
  Var y(out[0]);
  Fn node;
  ASSERT_CH_OK(ch_variable_creator(node.out(), y));
  ASSERT_TRUE(node);
  x1.reset();  // the node's saved inputs now hold the only references
  x2.reset();
  ASSERT_EQ(u1.releases + u2.releases, 0);
  u1.node = node;
  ASSERT_CH_OK(ch_function_unchain(node));
  EXPECT_EQ(u1.releases, 1);
  EXPECT_EQ(u2.releases, 1);
  EXPECT_EQ(u1.status, CH_OK) << ch_error_message();
  EXPECT_FALSE(has_creator(y));
  EXPECT_TRUE(AllClose(data_of(y), {1, 2}));
}

// ---- a backward started from inside a backward callback --------------------

// What the user function's backward does besides passing gy on (y = x).
enum class Nested { None, BackwardOwnGraph, BackwardOuterRoot, BackwardShared, GradOuter };

struct NestState {
  Nested what = Nested::None;
  ch_variable* other = nullptr;  // borrowed: the variable the nested call starts from
  ch_variable* wrt = nullptr;    // borrowed: ch_grad's input
  ch_status status = CH_OK;      // of the nested call
  std::string message;
  std::vector<double> result;  // ch_grad's gradient
  int calls = 0;               // of the backward by the outer pass
  int nested_calls = 0;        // by a nested pass through this node (which does not nest again)
  int depth = 0;
};

ch_status nesting_backward(void* user, ch_context* ctx, ch_array* const*, size_t, ch_array* const*,
                           size_t, ch_array* const* gy, size_t) {
  auto* s = static_cast<NestState*>(user);
  if (s->depth > 0) {
    ++s->nested_calls;
    return ch_context_set_grad_input(ctx, 0, gy[0]);
  }
  ++s->calls;
  ++s->depth;
  switch (s->what) {
    case Nested::None:
      break;
    case Nested::GradOuter: {
      ch_variable* g[1] = {nullptr};
      ch_variable* outs[1] = {s->other};
      ch_variable* ins[1] = {s->wrt};
      s->status = ch_grad(g, outs, 1, ins, 1, nullptr, nullptr);
      if (s->status == CH_OK) {
        s->result = data_of(g[0]);
        ch_variable_release(g[0]);
      }
      break;
    }
    default:
      s->status = ch_variable_backward(s->other, 0);
  }
  --s->depth;
  if (s->status != CH_OK) s->message = ch_error_message();
  return ch_context_set_grad_input(ctx, 0, gy[0]);
}

Fn nesting_function(NestState& s) {
  ch_function_def def = {};
  def.version = CH_FUNCTION_DEF_VERSION;
  def.name = "nests";
  def.forward = copy_first;
  def.backward = nesting_backward;
  def.user_data = &s;
  Fn f;
  EXPECT_CH_OK(ch_function_new(f.out(), &def));
  return f;
}

Var apply_one(ch_function* f, ch_variable* x) {
  ch_variable* in[1] = {x};
  ch_variable* out[1] = {nullptr};
  size_t n_out = 0;
  EXPECT_CH_OK(ch_function_apply(f, in, 1, out, 1, &n_out));
  EXPECT_EQ(n_out, 1u);
  return Var(out[0]);
}

// The graph the nested tests use: x -> a = x * x; z = sum(nests(a)) + sum(a)
// (or the two terms the other way round, which changes which node the pass
// reaches first). dz/dx = 2 * (1 + 1) * x = 4x.
struct Graph {
  Var x, a, h, s1, s2, z;
  Graph(ch_function* f, bool nests_first) {
    x = var_f32({3}, {1, -2, 3});
    EXPECT_CH_OK(ch_functions_mul(a.out(), x, x));
    h = apply_one(f, a);
    EXPECT_CH_OK(ch_functions_sum(s1.out(), h));
    EXPECT_CH_OK(ch_functions_sum(s2.out(), a));
    EXPECT_CH_OK(nests_first ? ch_functions_add(z.out(), s1, s2)
                             : ch_functions_add(z.out(), s2, s1));
  }
};
const std::vector<double> kGradX = {4, -8, 12};

// A backward on a graph of its own, from inside the callback: both it and
// the outer pass give the gradients they give when run one after the other.
TEST_F(Reentrancy, NestedBackwardOnItsOwnGraphMatchesTheSeparateRuns) {
  for (bool nests_first : {true, false}) {
    SCOPED_TRACE(nests_first ? "nests first" : "sum first");
    NestState s;
    Fn f = nesting_function(s);
    Graph g(f, nests_first);
    Var u = var_f32({2}, {3, 5}), v, w;  // w = sum(u * u): dw/du = 2u
    ASSERT_CH_OK(ch_functions_mul(v.out(), u, u));
    ASSERT_CH_OK(ch_functions_sum(w.out(), v));
    s.what = Nested::BackwardOwnGraph;
    s.other = w;
    ASSERT_CH_OK(ch_variable_backward(g.z, 0));
    EXPECT_EQ(s.calls, 1);
    EXPECT_EQ(s.status, CH_OK) << s.message;
    EXPECT_TRUE(AllClose(grad_of(g.x), kGradX));
    EXPECT_TRUE(AllClose(grad_of(u), {6, 10}));
    // The reference: the same passes, not nested.
    s.what = Nested::None;
    ASSERT_CH_OK(ch_variable_backward(g.z, 0));
    ASSERT_CH_OK(ch_variable_backward(w, 0));
    EXPECT_TRUE(AllClose(grad_of(g.x), kGradX));
    EXPECT_TRUE(AllClose(grad_of(u), {6, 10}));
  }
}

// From inside the callback, a backward from the outer pass's own root:
// refused (the outer pass is still summing that graph's gradients), and the
// outer gradients are those of a pass without the nested call.
TEST_F(Reentrancy, NestedBackwardFromTheOuterRootIsAGraphError) {
  for (bool nests_first : {true, false}) {
    SCOPED_TRACE(nests_first ? "nests first" : "sum first");
    NestState s;
    Fn f = nesting_function(s);
    Graph g(f, nests_first);
    s.what = Nested::BackwardOuterRoot;
    s.other = g.z;
    ASSERT_CH_OK(ch_variable_backward(g.z, 0));
    EXPECT_EQ(s.calls, 1);
    EXPECT_EQ(s.nested_calls, 0);  // refused before it ran anything
    EXPECT_EQ(s.status, CH_ERR_GRAPH);
    EXPECT_TRUE(contains(s.message, "outer backward pass")) << s.message;
    EXPECT_TRUE(contains(s.message, "'nests'")) << s.message;
    EXPECT_TRUE(AllClose(grad_of(g.x), kGradX));
  }
}

// From inside the callback, a backward from t = sum(a), where a is a
// variable the outer pass sums gradients into from two consumers. When the
// outer pass has already reached a, the nested pass would have replaced
// what it summed there (x's gradient would have been 2x instead of 4x): it
// is refused. When a is not reached yet, the nested pass runs and the outer
// one then replaces what it left. Either way the outer gradient is the one
// computed without the nested call.
TEST_F(Reentrancy, NestedBackwardIntoTheOuterGraphNeverChangesTheOuterGradients) {
  int refused = 0;
  for (bool nests_first : {true, false}) {
    SCOPED_TRACE(nests_first ? "nests first" : "sum first");
    NestState s;
    Fn f = nesting_function(s);
    Graph g(f, nests_first);
    Var t;
    ASSERT_CH_OK(ch_functions_sum(t.out(), g.a));
    s.what = Nested::BackwardShared;
    s.other = t;
    ASSERT_CH_OK(ch_variable_backward(g.z, 0));
    EXPECT_EQ(s.calls, 1);
    if (s.status != CH_OK) {
      ++refused;
      EXPECT_EQ(s.status, CH_ERR_GRAPH);
      EXPECT_TRUE(contains(s.message, "outer backward pass")) << s.message;
    }
    EXPECT_TRUE(AllClose(grad_of(g.x), kGradX));
  }
  EXPECT_GE(refused, 1);  // the order in which the outer pass reached a first
}

// ch_grad from inside the callback, over the outer graph itself: it keeps
// its gradients to itself, so it gives what it gives outside the pass, and
// the outer gradients are unchanged.
TEST_F(Reentrancy, GradFromInsideABackwardCallbackMatchesTheSeparateRun) {
  for (bool nests_first : {true, false}) {
    SCOPED_TRACE(nests_first ? "nests first" : "sum first");
    NestState s;
    Fn f = nesting_function(s);
    Graph g(f, nests_first);
    s.what = Nested::GradOuter;
    s.other = g.z;
    s.wrt = g.x;
    ASSERT_CH_OK(ch_variable_backward(g.z, 0));
    EXPECT_EQ(s.calls, 1);
    EXPECT_EQ(s.nested_calls, 1);  // ch_grad's pass ran this node's backward too
    ASSERT_EQ(s.status, CH_OK) << s.message;
    EXPECT_TRUE(AllClose(s.result, kGradX));
    EXPECT_TRUE(AllClose(grad_of(g.x), kGradX));
    // The reference: ch_grad outside any pass (the callback does nothing).
    s.what = Nested::None;
    Var gx;
    ch_variable* outs[1] = {g.z};
    ch_variable* ins[1] = {g.x};
    ASSERT_CH_OK(ch_grad(gx.out(), outs, 1, ins, 1, nullptr, nullptr));
    EXPECT_TRUE(AllClose(data_of(gx), kGradX));
  }
}

}  // namespace
