// Regression tests of issue 48 (a hostile host program's findings), one class
// of fault each, through the public C API:
//  - re-entrant callbacks: a backward callback that unchains its own node, a
//    wrapped buffer's release callback that releases another variable while
//    the engine lets a variable's data go (a deadlock, so run in a child with
//    an alarm);
//  - empty arrays with huge extents, such as (2**40, C, 0), through softmax,
//    local response normalization and the other functions (hangs before:
//    run in a child with an alarm);
//  - sizes computed from user input: concatenation, pooling and convolution
//    geometry, element counts (UndefinedBehaviorSanitizer's reports before);
//  - statuses: CH_GEMM's error after ch_config_set_gemm, an int32 gradient,
//    the step count at INT64_MAX;
//  - stale handles: a released handle stays released however many handles
//    come after it.
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "capi_test_util.h"

using namespace capi_test;

namespace {

class Hostile : public CapiTest {};

constexpr int64_t k2p40 = int64_t{1} << 40;
constexpr int64_t k2p62 = int64_t{1} << 62;

// Runs `body` in a forked child that SIGALRM kills after `seconds`: a hang
// or a deadlock fails the test in bounded time instead of stalling the suite.
#define EXPECT_FINISHES_WITHIN(seconds, ...)                         \
  do {                                                               \
    auto ch_body_ = [&]() __VA_ARGS__;                               \
    EXPECT_EXIT((alarm(seconds), ch_body_(), std::fflush(nullptr),   \
                 std::_Exit(::testing::Test::HasFailure() ? 1 : 0)), \
                ::testing::ExitedWithCode(0), "");                   \
  } while (0)

// ---- item 1: a backward callback that unchains its own node ---------------

enum class Unchain { Function, OutputBackward };

struct UnchainState {
  Unchain how;
  int backward_calls = 0;
};

ch_status copy_forward(void*, ch_context* ctx, ch_array* const* in, size_t) {
  ch_array* y = nullptr;
  ch_status st = ch_array_copy(&y, in[0]);
  if (st != CH_OK) return st;
  st = ch_context_add_output(ctx, y);
  ch_array_release(y);
  return st;
}

// Unchains the node being backpropagated, then passes the gradient on.
ch_status unchaining_backward(void* user, ch_context* ctx, ch_array* const*, size_t,
                              ch_array* const*, size_t, ch_array* const* gy, size_t) {
  auto* s = static_cast<UnchainState*>(user);
  ++s->backward_calls;
  ch_function* f = nullptr;
  ch_status st = ch_context_function(&f, ctx);
  if (st != CH_OK) return st;
  if (s->how == Unchain::Function) {
    st = ch_function_unchain(f);
  } else {
    ch_variable* y = nullptr;
    st = ch_function_output(&y, f, 0);
    if (st == CH_OK && y) {
      st = ch_variable_unchain_backward(y);
      ch_variable_release(y);
    }
  }
  ch_function_release(f);
  if (st != CH_OK) return st;
  ch_array* g = nullptr;
  st = ch_array_copy(&g, gy[0]);
  if (st != CH_OK) return st;
  st = ch_context_set_grad_input(ctx, 0, g);
  ch_array_release(g);
  return st;
}

void run_unchain_in_backward(Unchain how) {
  UnchainState state{how};
  ch_function_def def = {};
  def.version = CH_FUNCTION_DEF_VERSION;
  def.name = "unchains_itself";
  def.forward = copy_forward;
  def.backward = unchaining_backward;
  def.user_data = &state;
  Fn f;
  ASSERT_CH_OK(ch_function_new(f.out(), &def));
  Var x = var_f32({3}, {1, 2, 3});
  Var h, y;
  // x -> identity -> h -> user function (unchains itself) -> y -> sum -> z
  ASSERT_CH_OK(ch_functions_identity(h.out(), x));
  ch_variable* in[1] = {h};
  ch_variable* out[1] = {nullptr};
  size_t n_out = 0;
  ASSERT_CH_OK(ch_function_apply(f, in, 1, out, 1, &n_out));
  ASSERT_EQ(n_out, 1u);
  y.reset(out[0]);
  Var z;
  ASSERT_CH_OK(ch_functions_sum(z.out(), y));
  ASSERT_CH_OK(ch_variable_backward(z, 1));
  EXPECT_EQ(state.backward_calls, 1);
  // Chainer's backward holds the node's inputs across its call: the
  // gradients the callback returned still reach h, and through identity, x
  // (unchain_backward on y also cut identity, already queued: it is skipped).
  EXPECT_TRUE(AllClose(grad_of(h), {1, 1, 1}));
  if (how == Unchain::Function)
    EXPECT_TRUE(AllClose(grad_of(x), {1, 1, 1}));
  else
    EXPECT_FALSE(has_grad(x));
  EXPECT_FALSE(has_creator(y));
  // A second backward finds the graph cut above y.
  ASSERT_CH_OK(ch_variable_backward(z, 1));
  EXPECT_EQ(state.backward_calls, 1);
}

TEST_F(Hostile, BackwardCallbackUnchainsItsOwnFunction) {
  EXPECT_NO_CRASH({ run_unchain_in_backward(Unchain::Function); });
}

TEST_F(Hostile, BackwardCallbackUnchainsBackwardFromItsOutput) {
  EXPECT_NO_CRASH({ run_unchain_in_backward(Unchain::OutputBackward); });
}

// ---- item 2: a release callback that releases another variable ------------

struct ReleaseOther {
  ch_variable* other = nullptr;  // released by the callback
  ch_status status = CH_OK;
  int calls = 0;
};

void release_other(void*, void* user) {
  auto* r = static_cast<ReleaseOther*>(user);
  ++r->calls;
  r->status = ch_variable_release(r->other);
  r->other = nullptr;
}

// A variable `other` whose release takes the data-release path: made by a
// function, consumed by one whose backward does not read it.
void make_releasable(ch_variable** other, Var& keep_root, Var& keep_consumer) {
  keep_root = var_f32({2}, {1, -1});
  ASSERT_CH_OK(ch_functions_identity(other, keep_root));
  ASSERT_CH_OK(ch_functions_relu(keep_consumer.out(), *other));
}

TEST_F(Hostile, ReleaseCallbackReleasesAnotherVariableDuringDataRelease) {
  EXPECT_FINISHES_WITHIN(30, {
    static float buffer[4] = {1, -2, 3, -4};
    ReleaseOther r;
    Var root2, consumer2;
    make_releasable(&r.other, root2, consumer2);
    const int64_t shape[1] = {4};
    Arr wrapped;
    ASSERT_CH_OK(
        ch_array_wrap(wrapped.out(), CH_FLOAT32, shape, 1, buffer, cpu(), release_other, &r));
    // identity, then relu, then set_data (the sequence): h is made by
    // identity over the wrapped buffer, and relu does not read h in backward.
    Var x = make_var(wrapped);
    wrapped.reset();
    Var h, y;
    ASSERT_CH_OK(ch_functions_identity(h.out(), x));
    ASSERT_CH_OK(ch_functions_relu(y.out(), h));
    Arr fresh = f32({4}, {0, 0, 0, 0});
    ASSERT_CH_OK(ch_variable_set_data(x, fresh));
    // The last handle to h: its data (the wrapped buffer, if identity kept
    // it) goes, and the callback releases `other` from inside that release.
    h.reset();
    x.reset();
    y.reset();
    EXPECT_EQ(r.calls, 1);
    EXPECT_EQ(r.status, CH_OK) << ch_error_message();
  });
}

TEST_F(Hostile, ReleaseCallbackReleasesAnotherVariableDuringSetData) {
  EXPECT_FINISHES_WITHIN(30, {
    static double buffer[2] = {1, 2};
    ReleaseOther r;
    Var root2, consumer2;
    make_releasable(&r.other, root2, consumer2);
    const int64_t shape[1] = {2};
    Arr wrapped;
    ASSERT_CH_OK(
        ch_array_wrap(wrapped.out(), CH_FLOAT64, shape, 1, buffer, cpu(), release_other, &r));
    Var x = make_var(wrapped);
    wrapped.reset();
    Arr fresh = f64({2}, {3, 4});
    // The wrapped buffer's last reference goes inside set_data.
    ASSERT_CH_OK(ch_variable_set_data(x, fresh));
    EXPECT_EQ(r.calls, 1);
    EXPECT_EQ(r.status, CH_OK) << ch_error_message();
    EXPECT_TRUE(AllClose(data_of(x), {3, 4}));
  });
}

// ---- item 3: empty arrays with huge extents -------------------------------

// Applies `fn` to an empty float32 variable of `shape`, and backward through
// sum of the result: every step must finish at once (no loop over the rows).
void expect_empty_ok(const char* name, std::vector<int64_t> shape,
                     const std::function<ch_status(ch_variable**, ch_variable*)>& fn,
                     std::vector<int64_t> out_shape = {}) {
  if (out_shape.empty()) out_shape = shape;
  SCOPED_TRACE(name);
  Arr a;
  ASSERT_CH_OK(ch_array_new_empty(a.out(), CH_FLOAT32, shape.data(),
                                  static_cast<int32_t>(shape.size()), cpu()));
  EXPECT_EQ(ch_array_size(a), 0);
  Var x = make_var(a);
  Var y;
  ASSERT_CH_OK(fn(y.out(), x));
  std::vector<int64_t> ys = shape_of(Arr([&] {
    ch_array* d = nullptr;
    EXPECT_CH_OK(ch_variable_data(&d, y));
    return d;
  }()));
  EXPECT_EQ(ys, out_shape);
  Var s;
  ASSERT_CH_OK(ch_functions_sum(s.out(), y));
  EXPECT_TRUE(AllClose(data_of(s), {0}));
  ASSERT_CH_OK(ch_variable_backward(s, 0));
}

TEST_F(Hostile, EmptyArraysWithHugeExtentsFinish) {
  EXPECT_FINISHES_WITHIN(60, {
    const std::vector<int64_t> big = {k2p40, 3, 0};
    expect_empty_ok("softmax", big,
                    [](ch_variable** o, ch_variable* x) { return ch_functions_softmax(o, x); });
    expect_empty_ok("softmax (2^40, C, 0, 2^20)", {k2p40, 5, 0, 1 << 20},
                    [](ch_variable** o, ch_variable* x) { return ch_functions_softmax(o, x); });
    expect_empty_ok("local_response_normalization", big, [](ch_variable** o, ch_variable* x) {
      return ch_functions_local_response_normalization(o, x, 5, 2, 1e-4, 0.75);
    });
    expect_empty_ok("local_response_normalization 4-d", {k2p40, 7, 0, 1 << 20},
                    [](ch_variable** o, ch_variable* x) {
                      return ch_functions_local_response_normalization(o, x, 3, 1, 1e-4, 0.75);
                    });
    expect_empty_ok("relu", big,
                    [](ch_variable** o, ch_variable* x) { return ch_functions_relu(o, x); });
    expect_empty_ok("tanh", big,
                    [](ch_variable** o, ch_variable* x) { return ch_functions_tanh(o, x); });
    expect_empty_ok("leaky_relu", big, [](ch_variable** o, ch_variable* x) {
      return ch_functions_leaky_relu(o, x, 0.2);
    });
    expect_empty_ok("exp", big,
                    [](ch_variable** o, ch_variable* x) { return ch_functions_exp(o, x); });
    expect_empty_ok("dropout", big, [](ch_variable** o, ch_variable* x) {
      return ch_functions_dropout(o, x, 0.5, 1);
    });
    expect_empty_ok("identity", big,
                    [](ch_variable** o, ch_variable* x) { return ch_functions_identity(o, x); });
    expect_empty_ok("mul (x * x)", big,
                    [](ch_variable** o, ch_variable* x) { return ch_functions_mul(o, x, x); });
    expect_empty_ok("concat (x, x) on axis 1", big,
                    [](ch_variable** o, ch_variable* x) {
                      ch_variable* xs[2] = {x, x};
                      return ch_functions_concat(o, xs, 2, 1);
                    },
                    {k2p40, 6, 0});
    expect_empty_ok("transpose", big,
                    [](ch_variable** o, ch_variable* x) {
                      const int32_t axes[3] = {2, 0, 1};
                      return ch_functions_transpose(o, x, axes, 3);
                    },
                    {0, k2p40, 3});
    expect_empty_ok(
        "sum_axis 1", big,
        [](ch_variable** o, ch_variable* x) { return ch_functions_sum_axis(o, x, 1, 0); },
        {k2p40, 0});
  });
}

TEST_F(Hostile, EmptyArraysReportTheirShape) {
  // (2^40, 2^40, 0): the leading product overflows 64 bits, the count is 0.
  const int64_t shape[3] = {k2p40, k2p40, 0};
  Arr a;
  ASSERT_CH_OK(ch_array_new_empty(a.out(), CH_FLOAT32, shape, 3, cpu()));
  EXPECT_EQ(ch_array_size(a), 0);
  EXPECT_EQ(ch_array_nbytes(a), 0u);
  Var x = make_var(a), y;
  ASSERT_CH_OK(ch_functions_softmax(y.out(), x));
  EXPECT_EQ(ch_variable_size(y), 0);
}

// A grad set on an output whose data ch_variable_set_data replaced with
// another shape reached the creator's backward, which read it against the
// shape forward made (fuzz_reentry: a heap overflow in LRN's backward).
TEST_F(Hostile, GradOfAReplacedOutputIsCheckedAgainstForwardsShape) {
  Var x = var_f32({2, 3, 1, 1}, {1, 2, 3, 4, 5, 6}), y;
  ASSERT_CH_OK(ch_functions_local_response_normalization(y.out(), x, 5, 2.0, 1e-4, 0.75));
  Arr small = f32({1, 1, 1, 1}, {1}), g = f32({1, 1, 1, 1}, {1});
  ASSERT_CH_OK(ch_variable_set_data(y, small));
  ASSERT_CH_OK(ch_variable_set_grad(y, g));
  EXPECT_CH_ERR(CH_ERR_SHAPE, ch_variable_backward(y, 0));
  EXPECT_TRUE(contains(ch_error_message(), "LocalResponseNormalization")) << ch_error_message();
  EXPECT_FALSE(has_grad(x));
  // The library keeps working: a fresh graph backpropagates.
  Var y2;
  ASSERT_CH_OK(ch_functions_local_response_normalization(y2.out(), x, 5, 2.0, 1e-4, 0.75));
  Arr g2 = full(CH_FLOAT32, {2, 3, 1, 1}, 1.0);
  ASSERT_CH_OK(ch_variable_set_grad(y2, g2));
  EXPECT_CH_OK(ch_variable_backward(y2, 0));
  EXPECT_TRUE(has_grad(x));
}

// ---- item 6: sizes from user input, statuses -------------------------------

TEST_F(Hostile, ConcatExtentOverflowIsAShapeError) {
  const int64_t shape[2] = {0, k2p62};
  Arr a;
  ASSERT_CH_OK(ch_array_new_empty(a.out(), CH_FLOAT32, shape, 2, cpu()));
  Var x0 = make_var(a), x1 = make_var(a), y;
  ch_variable* xs[2] = {x0, x1};
  EXPECT_CH_ERR(CH_ERR_SHAPE, ch_functions_concat(y.out(), xs, 2, 1));
  EXPECT_TRUE(contains(ch_error_message(), "concat")) << ch_error_message();
  EXPECT_EQ(y.get(), nullptr);
  // 2^61 + 2^61 = 2^62 is the largest extent: allowed (the array is empty).
  const int64_t half[2] = {0, int64_t{1} << 61};
  Arr b;
  ASSERT_CH_OK(ch_array_new_empty(b.out(), CH_FLOAT32, half, 2, cpu()));
  Var z0 = make_var(b), z1 = make_var(b);
  ch_variable* zs[2] = {z0, z1};
  ASSERT_CH_OK(ch_functions_concat(y.out(), zs, 2, 1));
  Arr d;
  ASSERT_CH_OK(ch_variable_data(d.out(), y));
  EXPECT_EQ(shape_of(d), (std::vector<int64_t>{0, k2p62}));
}

TEST_F(Hostile, ElementCountOverflowIsAShapeError) {
  const int64_t shape[3] = {k2p40, k2p40, 1};
  Arr a;
  EXPECT_CH_ERR(CH_ERR_SHAPE, ch_array_new_empty(a.out(), CH_FLOAT32, shape, 3, cpu()));
  const int64_t neg[2] = {0, -1};
  EXPECT_CH_ERR(CH_ERR_SHAPE, ch_array_new_empty(a.out(), CH_FLOAT32, neg, 2, cpu()));
}

TEST_F(Hostile, PoolingGeometryOverflowIsAnError) {
  Var x = var_f32({1, 1, 2, 2}, {1, 2, 3, 4});
  const int64_t huge[] = {k2p62, INT64_MAX, INT64_MAX - 1};
  for (int64_t v : huge) {
    SCOPED_TRACE(v);
    Var y;
    // pad, window and stride at the extremes: an error, never a wrapped size.
    ch_status st = ch_functions_max_pooling_2d(y.out(), x, 2, 2, 1, 1, v, 0, 0);
    EXPECT_NE(st, CH_OK);
    st = ch_functions_max_pooling_2d(y.out(), x, 2, 2, 1, 1, v, v, 1);
    EXPECT_NE(st, CH_OK);
    st = ch_functions_max_pooling_2d(y.out(), x, v, 2, v, 1, 0, 0, 1);
    EXPECT_NE(st, CH_OK);
    st = ch_functions_average_pooling_2d(y.out(), x, 2, 2, v, v, v, v);
    EXPECT_NE(st, CH_OK);
    st = ch_functions_average_pooling_2d(y.out(), x, 1, 1, v, v, 0, 0);
    if (v == k2p62) {  // a stride past the input: one window
      ASSERT_CH_OK(st);
      EXPECT_TRUE(AllClose(data_of(y), {1}));
    } else {  // past 2**62
      EXPECT_EQ(st, CH_ERR_INVALID_ARGUMENT);
    }
  }
  // A window larger than the padded input names the window.
  Var y;
  EXPECT_CH_ERR(CH_ERR_SHAPE, ch_functions_max_pooling_2d(y.out(), x, 3, 3, 1, 1, 0, 0, 0));
  EXPECT_TRUE(contains(ch_error_message(), "window")) << ch_error_message();
}

TEST_F(Hostile, ConvolutionGeometryOverflowIsAnError) {
  Var x = var_f32({1, 1, 2, 2}, {1, 2, 3, 4});
  const int64_t huge[] = {k2p62, INT64_MAX, int64_t{1} << 31};
  for (int64_t v : huge) {
    SCOPED_TRACE(v);
    Fn conv;
    ch_status st = ch_functions_convolution_2d_new(conv.out(), 1, 1, 1, 1, 1, 1, v, v, CH_FLOAT32,
                                                   1, 0, 1, nullptr, nullptr);
    if (st == CH_OK) {
      ch_variable* in[1] = {x};
      ch_variable* out[1] = {nullptr};
      size_t n_out = 0;
      EXPECT_NE(ch_function_apply(conv, in, 1, out, 1, &n_out), CH_OK);
      EXPECT_STRNE(ch_error_message(), "");
      EXPECT_EQ(out[0], nullptr);
    }
    // A fan-in that overflows (in_channels * kh * kw) is refused too.
    EXPECT_NE(ch_functions_convolution_2d_new(conv.out(), v, 1, v, v, 1, 1, 0, 0, CH_FLOAT32, 1, 0,
                                              1, nullptr, nullptr),
              CH_OK);
  }
}

TEST_F(Hostile, OptimizerRefusesAGradientOfAnotherDtypeWithDtype) {
  Arr p = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  Arr g = make_array(CH_INT32, {2, 3}, {0, 0, 0, 0, 0, 0});
  ch_optimizer* raw = nullptr;
  ASSERT_CH_OK(ch_optimizer_sgd_new(&raw, 0.1));
  ch_array* ps[1] = {p};
  ch_array* gs[1] = {g};
  EXPECT_CH_ERR(CH_ERR_DTYPE, ch_optimizer_setup_arrays(raw, ps, gs, 1));
  Arr g2 = f32({3, 2}, {0, 0, 0, 0, 0, 0});
  gs[0] = g2;
  EXPECT_CH_ERR(CH_ERR_SHAPE, ch_optimizer_setup_arrays(raw, ps, gs, 1));
  ASSERT_CH_OK(ch_optimizer_release(raw));
}

TEST_F(Hostile, OptimizerStepCountDoesNotWrap) {
  Arr p = f32({2}, {1, 2});
  Arr g = f32({2}, {1, 1});
  ch_optimizer* raw = nullptr;
  ASSERT_CH_OK(ch_optimizer_sgd_new(&raw, 0.5));
  ch_array* ps[1] = {p};
  ch_array* gs[1] = {g};
  ASSERT_CH_OK(ch_optimizer_setup_arrays(raw, ps, gs, 1));
  ASSERT_CH_OK(ch_optimizer_set_t(raw, INT64_MAX - 1));
  ASSERT_CH_OK(ch_optimizer_update(raw));
  EXPECT_EQ(ch_optimizer_t(raw), INT64_MAX);
  EXPECT_TRUE(AllClose(values(p), {0.5, 1.5}));
  EXPECT_CH_ERR(CH_ERR_INVALID_ARGUMENT, ch_optimizer_update(raw));
  EXPECT_EQ(ch_optimizer_t(raw), INT64_MAX);
  EXPECT_TRUE(AllClose(values(p), {0.5, 1.5}));  // no step taken
  ASSERT_CH_OK(ch_optimizer_release(raw));
}

// CH_GEMM is read once per process: a fresh one (the threadsafe death test
// style re-runs this test alone in a new process).
TEST_F(Hostile, SetGemmClearsTheEnvironmentsError) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  auto child = [] {
    setenv("CH_GEMM", "no-such-library", 1);
    Var a = var_f32({2, 2}, {1, 2, 3, 4}), b = var_f32({2, 2}, {1, 0, 0, 1}), y;
    EXPECT_CH_ERR(CH_ERR_INVALID_ARGUMENT, ch_functions_matmul(y.out(), a, b, 0, 0));
    EXPECT_TRUE(contains(ch_error_message(), "no-such-library")) << ch_error_message();
    EXPECT_CH_ERR(CH_ERR_INVALID_ARGUMENT, ch_functions_matmul(y.out(), a, b, 0, 0));
    EXPECT_CH_OK(ch_config_set_gemm("auto"));
    EXPECT_CH_OK(ch_functions_matmul(y.out(), a, b, 0, 0));
    EXPECT_TRUE(AllClose(data_of(y), {1, 2, 3, 4}));
    y.reset();
    a.reset();
    b.reset();
    std::fflush(nullptr);
    std::_Exit(::testing::Test::HasFailure() ? 1 : 0);
  };
  EXPECT_EXIT(child(), ::testing::ExitedWithCode(0), "");
}

// ---- item 7: stale handles --------------------------------------------------

// The finding: after about 8.4M create/release cycles a released
// handle named a new array. Handle values are now issued once per process.
TEST_F(Hostile, ReleasedHandleStaysReleasedAcrossManyCycles) {
  const char* env = std::getenv("CH_HANDLE_CYCLES");
  const long cycles = env ? std::atol(env) : 9000000;
  const int64_t shape[1] = {1};
  ch_array* stale = nullptr;
  ASSERT_CH_OK(ch_array_new_empty(&stale, CH_FLOAT32, shape, 1, cpu()));
  ASSERT_CH_OK(ch_array_release(stale));
  for (long i = 0; i < cycles; ++i) {
    ch_array* a = nullptr;
    ASSERT_EQ(ch_array_new_empty(&a, CH_FLOAT32, shape, 1, cpu()), CH_OK) << i;
    ASSERT_NE(a, stale) << "a released handle was issued again after " << i << " cycles";
    ASSERT_EQ(ch_array_release(a), CH_OK);
  }
  EXPECT_EQ(ch_array_retain(stale), nullptr);
  EXPECT_EQ(ch_array_ndim(stale), 0);
  EXPECT_CH_ERR(CH_ERR_RELEASED_HANDLE, ch_array_release(stale));
}

TEST_F(Hostile, HandlesAreNeverUserAddresses) {
  // Every handle is a kernel address (bits 55 to 63 set), never memory the
  // host could own; arbitrary values with those bits are refused.
  Arr a = f32({1}, {1});
  const auto bits = reinterpret_cast<uintptr_t>(a.get());
  EXPECT_EQ(bits >> 55, uintptr_t{0x1ff});
  EXPECT_EQ(ch_array_retain(reinterpret_cast<ch_array*>(~uintptr_t{0})), nullptr);
  EXPECT_EQ(ch_array_retain(reinterpret_cast<ch_array*>(bits ^ (uintptr_t{1} << 22))), nullptr);
  EXPECT_CH_ERR(CH_ERR_RELEASED_HANDLE,
                ch_array_release(reinterpret_cast<ch_array*>(uintptr_t{0x1ff} << 55)));
}

}  // namespace
