// User-defined functions through C callbacks: the seed's MulAdd and ExpAdd
// (000 "Define your own function", 003 section 1.4), callback slot dispatch,
// EltwiseParamProduct with parameters (003 1.4.3), copy on call, and the
// per-application context (saved arrays, user data, no cycles).
#include <algorithm>
#include <cmath>
#include <random>

#include "user_functions.h"

using namespace capi_test;

namespace {

class CustomFunctions : public CapiTest {};

// Like the seed's np.random.uniform(-1, 1, shape), but deterministic.
std::vector<double> uniform(size_t n, unsigned seed, double lo = -1, double hi = 1) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  std::vector<double> v(n);
  for (double& x : v) x = dist(gen);
  return v;
}

// ---- MulAdd / ExpAdd, checked numerically --------------------------------------

void check_muladd(ch_dtype dtype, Slots slots, double eps, double atol, double rtol) {
  Probe probe;
  {
    Fn f = make_muladd(&probe, slots);
    ASSERT_TRUE(f);
    EXPECT_STREQ(ch_function_name(f), "MulAdd");
    // Seed 000: x, y, z = uniform(-1, 1, (3, 2)); w = MulAdd()(x, y, z)
    Arr x = make_array(dtype, {3, 2}, uniform(6, 1));
    Arr y = make_array(dtype, {3, 2}, uniform(6, 2));
    Arr z = make_array(dtype, {3, 2}, uniform(6, 3));
    Arr gw = make_array(dtype, {3, 2}, uniform(6, 4));
    ch_array* inputs[] = {x, y, z};
    ch_array* gouts[] = {gw};
    ASSERT_CH_OK(ch_check_backward(f, inputs, 3, gouts, 1, eps, atol, rtol));
    // Also with ones as the output gradient (NULL list).
    ASSERT_CH_OK(ch_check_backward(f, inputs, 3, nullptr, 0, eps, atol, rtol));

    // The forward values: w = x*y + z (computed here in double).
    Var vx = make_var(x), vy = make_var(y), vz = make_var(z);
    Var w = apply1(f, {vx, vy, vz});
    ASSERT_TRUE(w);
    EXPECT_EQ(creator_name(w), "MulAdd");
    std::vector<double> xs = values(x), ys = values(y), zs = values(z), expected;
    for (size_t i = 0; i < 6; ++i) expected.push_back(xs[i] * ys[i] + zs[i]);
    EXPECT_TRUE(AllClose(data_of(w), expected, 1e-6, 1e-6));
    // Backward by hand: gx = y * gw, gy = x * gw, gz = gw (seed 000's backward).
    ASSERT_CH_OK(ch_variable_set_grad(w, gw));
    ASSERT_CH_OK(ch_variable_backward(w, 0));
    std::vector<double> g = values(gw), ex, ey;
    for (size_t i = 0; i < 6; ++i) {
      ex.push_back(ys[i] * g[i]);
      ey.push_back(xs[i] * g[i]);
    }
    EXPECT_TRUE(AllClose(grad_of(vx), ex, 1e-6, 1e-6));
    EXPECT_TRUE(AllClose(grad_of(vy), ey, 1e-6, 1e-6));
    EXPECT_TRUE(AllClose(grad_of(vz), g, 0, 0));
    EXPECT_GT(probe.forward_calls.load(), 0);
    EXPECT_GT(probe.backward_calls.load(), 0);
    EXPECT_EQ(probe.destroyed.load(), 0);
  }
  EXPECT_EQ(probe.destroyed.load(), 1);
}

void check_expadd(ch_dtype dtype, Slots slots, double eps, double atol, double rtol) {
  Probe probe;
  {
    Fn f = make_expadd(&probe, slots);
    Arr x = make_array(dtype, {3, 2}, uniform(6, 5));
    Arr y = make_array(dtype, {3, 2}, uniform(6, 6));
    Arr gz = make_array(dtype, {3, 2}, uniform(6, 7));
    ch_array* inputs[] = {x, y};
    ch_array* gouts[] = {gz};
    ASSERT_CH_OK(ch_check_backward(f, inputs, 2, gouts, 1, eps, atol, rtol));
    Var vx = make_var(x), vy = make_var(y);
    Var z = apply1(f, {vx, vy});
    std::vector<double> xs = values(x), ys = values(y), expected;
    for (size_t i = 0; i < 6; ++i) expected.push_back(std::exp(xs[i]) + std::exp(ys[i]));
    EXPECT_TRUE(AllClose(data_of(z), expected, 1e-6, 1e-6));
  }
  EXPECT_EQ(probe.destroyed.load(), 1);
}

TEST_F(CustomFunctions, MulAddFloat64) {
  check_muladd(CH_FLOAT64, Slots::Generic, 1e-3, 1e-9, 1e-9);
}
TEST_F(CustomFunctions, MulAddFloat32) {
  check_muladd(CH_FLOAT32, Slots::Generic, 1e-2, 1e-3, 1e-3);
}
TEST_F(CustomFunctions, ExpAddFloat64) {
  check_expadd(CH_FLOAT64, Slots::Generic, 1e-4, 1e-7, 1e-7);
}
TEST_F(CustomFunctions, ExpAddFloat32) {
  check_expadd(CH_FLOAT32, Slots::Generic, 1e-2, 1e-3, 1e-3);
}
// The seed's first form: forward_cpu / backward_cpu only.
TEST_F(CustomFunctions, MulAddCpuSlots) { check_muladd(CH_FLOAT64, Slots::Cpu, 1e-3, 1e-9, 1e-9); }
TEST_F(CustomFunctions, ExpAddCpuSlots) { check_expadd(CH_FLOAT32, Slots::Cpu, 1e-2, 1e-3, 1e-3); }
// function.h: "for inputs on the CPU the engine calls forward_cpu if set,
// else forward" -- with both set the generic ones (which fail) never run.
TEST_F(CustomFunctions, CpuSlotsPreferredOverGeneric) {
  check_muladd(CH_FLOAT32, Slots::Both, 1e-2, 1e-3, 1e-3);
  check_expadd(CH_FLOAT64, Slots::Both, 1e-4, 1e-7, 1e-7);
}

TEST_F(CustomFunctions, GpuOnlyForwardOnCpuInputsFails) {
  ch_function_def def{};
  def.version = CH_FUNCTION_DEF_VERSION;
  def.name = "GpuOnly";
  def.forward_gpu = [](void*, ch_context*, ch_array* const*, size_t) -> ch_status { return CH_OK; };
  Fn f;
  ASSERT_CH_OK(ch_function_new(f.out(), &def));
  Var x = var_f32({1}, {1});
  ch_variable* in[] = {x};
  Var y;
  ch_status st = ch_function_apply(f, in, 1, y.out(), 1, nullptr);
  EXPECT_NE(st, CH_OK);
  EXPECT_EQ(y.get(), nullptr);
  EXPECT_TRUE(contains(ch_error_message(), "GpuOnly")) << ch_error_message();
}

TEST_F(CustomFunctions, MissingBackwardMeansNotDifferentiable) {
  // function.h: "A missing backward makes the function non-differentiable."
  Lambda l;
  l.forward = [](ch_context* ctx, ch_array* const* in, size_t) -> ch_status {
    return ch_context_add_output(ctx, in[0]);
  };
  Fn f = make_lambda_fn("NoGrad", &l);
  Var x = var_f32({2}, {1, 2});
  Var y = apply1(f, {x});
  Var z;
  ASSERT_CH_OK(ch_functions_mul_scalar(z.out(), y, 2.0));
  Arr ones = full(CH_FLOAT32, {2}, 1.0);
  ASSERT_CH_OK(ch_variable_set_grad(z, ones));
  ASSERT_CH_OK(ch_variable_backward(z, 1));
  EXPECT_TRUE(AllClose(grad_of(y), {2, 2}, 0, 0));
  EXPECT_FALSE(has_grad(x));
}

TEST_F(CustomFunctions, InputsArriveZeroCopyAndMayBeRetained) {
  // function.h: inputs are borrowed handles whose memory is the engine's,
  // passed without copying; retaining one keeps it alive after the callback.
  Arr xa = f32({3}, {1, 2, 3});
  const void* seen_ptr = nullptr;
  ch_array* kept = nullptr;
  Lambda l;
  l.forward = [&](ch_context* ctx, ch_array* const* in, size_t n) -> ch_status {
    EXPECT_EQ(n, 1u);
    seen_ptr = ch_array_data(in[0]);
    kept = ch_array_retain(in[0]);
    return ch_context_add_output(ctx, in[0]);  // identity, zero-copy
  };
  Fn f = make_lambda_fn("Keep", &l);
  {
    Var x = make_var(xa);
    Var y = apply1(f, {x});
    EXPECT_EQ(seen_ptr, ch_array_data(xa));
    EXPECT_EQ(data_ptr(y), ch_array_data(xa)) << "an output may share an input's memory";
  }
  ASSERT_NE(kept, nullptr);
  EXPECT_TRUE(AllClose(values(kept), {1, 2, 3}, 0, 0));
  EXPECT_CH_OK(ch_array_release(kept));
}

TEST_F(CustomFunctions, ContextIsOnlyValidDuringTheCallback) {
  ch_context* leaked_ctx = nullptr;
  ch_array* leaked_input = nullptr;
  Lambda l;
  l.forward = [&](ch_context* ctx, ch_array* const* in, size_t) -> ch_status {
    leaked_ctx = ctx;
    leaked_input = in[0];  // borrowed, not retained
    return ch_context_add_output(ctx, in[0]);
  };
  Fn f = make_lambda_fn("Leaky", &l);
  Var x = var_f32({1}, {1});
  Var y = apply1(f, {x});
  ASSERT_NE(leaked_ctx, nullptr);
  Arr a = f32({1}, {1});
  EXPECT_CH_ERR(CH_ERR_RELEASED_HANDLE, ch_context_save(leaked_ctx, a));
  EXPECT_CH_ERR(CH_ERR_RELEASED_HANDLE, ch_context_add_output(leaked_ctx, a));
  EXPECT_EQ(ch_context_user_data(leaked_ctx), nullptr);
  EXPECT_EQ(ch_context_saved_count(leaked_ctx), 0u);
  double v = 0;
  EXPECT_CH_ERR(CH_ERR_RELEASED_HANDLE, ch_array_get(&v, leaked_input, 0));
}

TEST_F(CustomFunctions, MultipleOutputsAndZeroGradForUnusedOutput) {
  // Split2: (a, b) = (2x, 3x); backward gx = 2 ga + 3 gb. Only `a` is used
  // downstream, so backward gets zeros for gb (function.h: "zeros where no
  // gradient flowed back").
  std::vector<double> seen_gb;
  Lambda l;
  l.forward = [](ch_context* ctx, ch_array* const* in, size_t) -> ch_status {
    for (float k : {2.0f, 3.0f}) {
      ch_array* o = nullptr;
      ch_status st = new_like(&o, in[0]);
      if (st != CH_OK) return st;
      for (int64_t i = 0; i < ch_array_size(in[0]); ++i)
        mdata<float>(o)[i] = k * cdata<float>(in[0])[i];
      st = ch_context_add_output(ctx, o);
      ch_array_release(o);
      if (st != CH_OK) return st;
    }
    return CH_OK;
  };
  l.backward = [&](ch_context* ctx, ch_array* const* in, size_t, ch_array* const* out, size_t n_out,
                   ch_array* const* gout, size_t n_gout) -> ch_status {
    EXPECT_EQ(n_out, 2u);
    EXPECT_EQ(n_gout, 2u);
    EXPECT_EQ(ch_array_size(out[1]), ch_array_size(in[0]));
    seen_gb = values(gout[1]);
    ch_array* gx = nullptr;
    ch_status st = new_like(&gx, in[0]);
    if (st != CH_OK) return st;
    for (int64_t i = 0; i < ch_array_size(in[0]); ++i)
      mdata<float>(gx)[i] = 2 * cdata<float>(gout[0])[i] + 3 * cdata<float>(gout[1])[i];
    st = ch_context_set_grad_input(ctx, 0, gx);
    ch_array_release(gx);
    return st;
  };
  Fn f = make_lambda_fn("Split2", &l);
  Var x = var_f32({2}, {1, -1});
  ch_variable* in[] = {x};
  ch_variable* outs[2] = {nullptr, nullptr};
  size_t n = 0;
  ASSERT_CH_OK(ch_function_apply(f, in, 1, outs, 2, &n));
  EXPECT_EQ(n, 2u);
  Var a(outs[0]), b(outs[1]);
  EXPECT_TRUE(AllClose(data_of(a), {2, -2}, 0, 0));
  EXPECT_TRUE(AllClose(data_of(b), {3, -3}, 0, 0));
  Var s;
  ASSERT_CH_OK(ch_functions_sum(s.out(), a));
  ASSERT_CH_OK(ch_variable_backward(s, 0));
  EXPECT_TRUE(AllClose(seen_gb, {0, 0}, 0, 0));
  EXPECT_TRUE(AllClose(grad_of(x), {2, 2}, 0, 0));

  // Both outputs used: gx = 2 + 3 = 5 per element (hand-derived).
  Var t, s2;
  ASSERT_CH_OK(ch_functions_add(t.out(), a, b));
  ASSERT_CH_OK(ch_functions_sum(s2.out(), t));
  ASSERT_CH_OK(ch_variable_backward(s2, 0));
  EXPECT_TRUE(AllClose(grad_of(x), {5, 5}, 0, 0));

  // Capacity smaller than the number of outputs: only the first is returned,
  // *n_outputs still says how many there were.
  ch_variable* one[1] = {nullptr};
  ASSERT_CH_OK(ch_function_apply(f, in, 1, one, 1, &n));
  EXPECT_EQ(n, 2u);
  Var first(one[0]);
  EXPECT_TRUE(AllClose(data_of(first), {2, -2}, 0, 0));
  // Capacity 0 with no output array at all.
  ASSERT_CH_OK(ch_function_apply(f, in, 1, nullptr, 0, &n));
  EXPECT_EQ(n, 2u);

  // ch_check_backward with two outputs.
  Arr xa = f32({2}, {0.5, 0.25});
  ch_array* xs[] = {xa};
  EXPECT_CH_OK(ch_check_backward(f, xs, 1, nullptr, 0, 1e-2, 1e-3, 1e-3));
}

TEST_F(CustomFunctions, ZeroInputFunction) {
  // A function of no inputs (a constant source) is a node with no inputs.
  Lambda l;
  l.forward = [](ch_context* ctx, ch_array* const*, size_t n) -> ch_status {
    EXPECT_EQ(n, 0u);
    int64_t s[] = {2};
    ch_array* c = nullptr;
    ch_status st = ch_array_new_full(&c, CH_FLOAT32, s, 1, 4.0, ch_device_cpu());
    if (st != CH_OK) return st;
    st = ch_context_add_output(ctx, c);
    ch_array_release(c);
    return st;
  };
  l.backward = [](ch_context*, ch_array* const*, size_t n_in, ch_array* const*, size_t,
                  ch_array* const*, size_t) -> ch_status {
    EXPECT_EQ(n_in, 0u);
    return CH_OK;
  };
  Fn f = make_lambda_fn("Constant", &l);
  Var c;
  size_t n = 0;
  ASSERT_CH_OK(ch_function_apply(f, nullptr, 0, c.out(), 1, &n));
  EXPECT_EQ(n, 1u);
  EXPECT_TRUE(AllClose(data_of(c), {4, 4}, 0, 0));
  EXPECT_EQ(creator_name(c), "Constant");
  Var x = var_f32({2}, {1, 2});
  Var y, s;
  ASSERT_CH_OK(ch_functions_mul(y.out(), c, x));
  ASSERT_CH_OK(ch_functions_sum(s.out(), y));
  ASSERT_CH_OK(ch_variable_backward(s, 1));
  EXPECT_TRUE(AllClose(grad_of(x), {4, 4}, 0, 0));
  EXPECT_TRUE(AllClose(grad_of(c), {1, 2}, 0, 0));
}

TEST_F(CustomFunctions, CallbacksMayUseTheEngine) {
  // A host writes its function with the engine's own ops: forward through
  // volatile built-ins, backward by building a small graph and running a
  // nested backward inside the outer one. SoftplusLike: y = log(1 + exp(x)),
  // gx = gy * exp(x) / (1 + exp(x)) (hand-derived).
  Lambda l;
  auto softplus = [](ch_array* xa, bool is_volatile, ch_variable** x_out,
                     ch_variable** y_out) -> ch_status {
    ch_variable *x = nullptr, *e = nullptr, *e1 = nullptr;
    ch_status st = ch_variable_new(&x, xa, is_volatile ? 1 : 0);
    if (st == CH_OK) st = ch_functions_exp(&e, x);
    if (st == CH_OK) st = ch_functions_add_scalar(&e1, e, 1.0);
    if (st == CH_OK) st = ch_functions_log(y_out, e1);
    ch_variable_release(e);
    ch_variable_release(e1);
    *x_out = x;
    return st;
  };
  l.forward = [&](ch_context* ctx, ch_array* const* in, size_t) -> ch_status {
    ch_variable *x = nullptr, *y = nullptr;
    ch_status st = softplus(in[0], true, &x, &y);
    ch_array* d = nullptr;
    if (st == CH_OK) st = ch_variable_data(&d, y);
    if (st == CH_OK) st = ch_context_add_output(ctx, d);
    ch_array_release(d);
    ch_variable_release(x);
    ch_variable_release(y);
    return st;
  };
  l.backward = [&](ch_context* ctx, ch_array* const* in, size_t, ch_array* const*, size_t,
                   ch_array* const* gout, size_t) -> ch_status {
    ch_variable *x = nullptr, *y = nullptr;
    ch_status st = softplus(in[0], false, &x, &y);
    if (st == CH_OK) st = ch_variable_set_grad(y, gout[0]);
    if (st == CH_OK) st = ch_variable_backward(y, 0);  // nested backward
    ch_array* gx = nullptr;
    if (st == CH_OK) st = ch_variable_grad(&gx, x);
    if (st == CH_OK) st = ch_context_set_grad_input(ctx, 0, gx);
    ch_array_release(gx);
    ch_variable_release(x);
    ch_variable_release(y);
    return st;
  };
  Fn f = make_lambda_fn("Softplus", &l);
  Var x = var_f64({3}, {-1, 0, 2});
  Var y = apply1(f, {x});
  Var s;
  ASSERT_CH_OK(ch_functions_sum(s.out(), y));
  ASSERT_CH_OK(ch_variable_backward(s, 0));
  std::vector<double> ey, eg;
  for (double v : {-1.0, 0.0, 2.0}) {
    ey.push_back(std::log1p(std::exp(v)));
    eg.push_back(std::exp(v) / (1 + std::exp(v)));
  }
  EXPECT_TRUE(AllClose(data_of(y), ey, 1e-12, 1e-12));
  EXPECT_TRUE(AllClose(grad_of(x), eg, 1e-12, 1e-12));
  Arr xa = f64({3}, {0.3, -0.7, 1.1});
  ch_array* xs[] = {xa};
  EXPECT_CH_OK(ch_check_backward(f, xs, 1, nullptr, 0, 1e-4, 1e-8, 1e-7));
}

// The user data of a host-language function often owns engine handles (its
// parameters) and releases them in its destructor.
struct OwnsHandles {
  ch_array* w = nullptr;
  ch_variable* v = nullptr;
  std::atomic<int> destroyed{0};
};
void owns_handles_destroy(void* p) {
  auto* o = static_cast<OwnsHandles*>(p);
  EXPECT_EQ(ch_array_release(o->w), CH_OK);
  EXPECT_EQ(ch_variable_release(o->v), CH_OK);
  o->destroyed++;
}

TEST_F(CustomFunctions, DestroyCallbacksMayCallTheApi) {
  OwnsHandles owner;
  OwnsHandles ctx_owner;
  {
    owner.w = f32({1}, {2}).release();
    owner.v = var_f32({1}, {3}).release();
    ctx_owner.w = f32({1}, {4}).release();
    ctx_owner.v = var_f32({1}, {5}).release();
    ch_function_def def{};
    def.version = CH_FUNCTION_DEF_VERSION;
    def.name = "Owner";
    def.forward = [](void* ud, ch_context* ctx, ch_array* const* in, size_t) -> ch_status {
      auto* pair = static_cast<std::pair<OwnsHandles*, OwnsHandles*>*>(ud);
      ch_status st = ch_context_set_user_data(ctx, pair->second, owns_handles_destroy);
      if (st != CH_OK) return st;
      return ch_context_add_output(ctx, in[0]);
    };
    def.backward = [](void*, ch_context* ctx, ch_array* const*, size_t, ch_array* const*, size_t,
                      ch_array* const* gout,
                      size_t) -> ch_status { return ch_context_set_grad_input(ctx, 0, gout[0]); };
    static std::pair<OwnsHandles*, OwnsHandles*> pair;
    pair = {&owner, &ctx_owner};
    def.user_data = &pair;
    def.destroy = [](void* ud) {
      owns_handles_destroy(static_cast<std::pair<OwnsHandles*, OwnsHandles*>*>(ud)->first);
    };
    Fn f;
    ASSERT_CH_OK(ch_function_new(f.out(), &def));
    Var x = var_f32({1}, {1});
    Var y = apply1(f, {x});
    ASSERT_CH_OK(ch_variable_backward(y, 0));
    // Release the graph first, the object last (its destroy then runs inside
    // ch_function_release and itself releases handles).
    y.reset();
    EXPECT_EQ(ctx_owner.destroyed.load(), 1);
    EXPECT_EQ(owner.destroyed.load(), 0);
  }
  EXPECT_EQ(owner.destroyed.load(), 1);
  EXPECT_EQ(ctx_owner.destroyed.load(), 1);
}

// ---- EltwiseParamProduct: parameters (seed 003 section 1.4.3) ---------------------

TEST_F(CustomFunctions, EltwiseParamProduct) {
  Probe probe;
  {
    Arr w = f32({3}, {1, 2, 3});
    Arr gw =
        full(CH_FLOAT32, {3}, 0.0);  // "gradient arrays are automatically zeroed by an optimizer"
    Fn f = make_eltwise_param_product(&probe, w, gw);
    ASSERT_TRUE(f);
    EXPECT_EQ(ch_function_parameter_count(f), 1u);
    Arr p, g;
    const char* name = nullptr;
    ASSERT_CH_OK(ch_function_parameter(p.out(), g.out(), &name, f, 0));
    EXPECT_EQ(ch_array_data(p), ch_array_data(w)) << "the parameter is shared, not copied";
    EXPECT_EQ(ch_array_data(g), ch_array_data(gw));
    EXPECT_STREQ(name, "w");
    EXPECT_CH_OK(ch_function_parameter(nullptr, nullptr, nullptr, f, 0));
    EXPECT_CH_ERR(CH_ERR_INVALID_ARGUMENT, ch_function_parameter(p.out(), g.out(), &name, f, 1));
    EXPECT_EQ(p.get(), nullptr);
    EXPECT_EQ(g.get(), nullptr);

    Var x = var_f32({3}, {4, 5, 6});
    Var y = apply1(f, {x});
    EXPECT_TRUE(AllClose(data_of(y), {4, 10, 18}, 0, 0));  // y = w * x
    // The application shares the object's parameters.
    Fn node;
    ASSERT_CH_OK(ch_variable_creator(node.out(), y));
    EXPECT_EQ(ch_function_parameter_count(node), 1u);
    ASSERT_CH_OK(ch_function_parameter(p.out(), g.out(), nullptr, node, 0));
    EXPECT_EQ(ch_array_data(p), ch_array_data(w));
    EXPECT_EQ(ch_array_data(g), ch_array_data(gw));

    Arr gy = f32({3}, {1, 2, 3});
    ASSERT_CH_OK(ch_variable_set_grad(y, gy));
    ASSERT_CH_OK(ch_variable_backward(y, 0));
    // Seed: gw += gy * x -> [4, 10, 18]; gx = gy * w -> [1, 4, 9].
    EXPECT_TRUE(AllClose(values(gw), {4, 10, 18}, 0, 0));
    EXPECT_TRUE(AllClose(grad_of(x), {1, 4, 9}, 0, 0));

    // A second application accumulates into the same gw ("Parameterized
    // functions must accumulate gradients on backward").
    Var x2 = var_f32({3}, {1, 1, 2});
    Var y2 = apply1(f, {x2});
    ASSERT_CH_OK(ch_variable_set_grad(y2, gy));
    ASSERT_CH_OK(ch_variable_backward(y2, 0));
    EXPECT_TRUE(AllClose(values(gw), {4 + 1, 10 + 2, 18 + 6}, 0, 0));
    EXPECT_TRUE(AllClose(grad_of(x2), {1, 4, 9}, 0, 0));

    // Its gradient with respect to x checks out numerically.
    Arr xa = f32({3}, {0.5, -1, 2});
    ch_array* xs[] = {xa};
    EXPECT_CH_OK(ch_check_backward(f, xs, 1, nullptr, 0, 1e-2, 1e-3, 1e-3));
  }
  EXPECT_EQ(probe.destroyed.load(), 1);
}

TEST_F(CustomFunctions, ParameterErrors) {
  Probe probe;
  Arr w = f32({3}, {1, 2, 3});
  Arr bad = full(CH_FLOAT32, {2}, 0.0);
  Arr bad_dtype = full(CH_FLOAT64, {3}, 0.0);
  Fn f = make_muladd(&probe);
  EXPECT_CH_ERR(CH_ERR_SHAPE, ch_function_add_parameter(f, "w", w, bad));
  EXPECT_NE(ch_function_add_parameter(f, "w", w, bad_dtype), CH_OK);
  EXPECT_EQ(ch_function_parameter_count(f), 0u);
  EXPECT_CH_ERR(CH_ERR_NULL_HANDLE, ch_function_add_parameter(f, "w", w, nullptr));
  // A built-in node has no parameters to add to.
  Var x = var_f32({3}, {1, 2, 3});
  Var y;
  ASSERT_CH_OK(ch_functions_exp(y.out(), x));
  Fn node;
  ASSERT_CH_OK(ch_variable_creator(node.out(), y));
  EXPECT_NE(ch_function_add_parameter(node, "w", w, w), CH_OK);
  EXPECT_EQ(ch_function_parameter_count(node), 0u);
}

// ---- copy on call (seed 003 1.4.3 note, 002) ----------------------------------------

TEST_F(CustomFunctions, CopyOnCallGivesOneNodePerApplication) {
  Probe probe;
  Fn f = make_muladd(&probe);
  EXPECT_EQ(ch_function_input_count(f), 0u) << "an unapplied object has no inputs";
  Var x1 = var_f64({2}, {1, 2}), y1 = var_f64({2}, {3, 4}), z1 = var_f64({2}, {5, 6});
  Var x2 = var_f64({2}, {-1, -2}), y2 = var_f64({2}, {7, 8}), z2 = var_f64({2}, {0, 1});
  Var w1 = apply1(f, {x1, y1, z1});
  Var w2 = apply1(f, {x2, y2, z2});
  Fn c1, c2;
  ASSERT_CH_OK(ch_variable_creator(c1.out(), w1));
  ASSERT_CH_OK(ch_variable_creator(c2.out(), w2));
  ASSERT_TRUE(c1);
  ASSERT_TRUE(c2);
  EXPECT_STREQ(ch_function_name(c1), "MulAdd");
  EXPECT_STREQ(ch_function_name(c2), "MulAdd");
  EXPECT_EQ(ch_function_input_count(c1), 3u);
  EXPECT_EQ(ch_function_input_count(c2), 3u);
  EXPECT_EQ(ch_function_input_count(f), 0u) << "applying must not turn the object into a node";
  // Each node points at its own inputs and outputs.
  ch_variable* ins1[] = {x1, y1, z1};
  ch_variable* ins2[] = {x2, y2, z2};
  for (size_t i = 0; i < 3; ++i) {
    Var a, b;
    ASSERT_CH_OK(ch_function_input(a.out(), c1, i));
    ASSERT_CH_OK(ch_function_input(b.out(), c2, i));
    EXPECT_EQ(data_ptr(a), data_ptr(ins1[i])) << "node 1 input " << i;
    EXPECT_EQ(data_ptr(b), data_ptr(ins2[i])) << "node 2 input " << i;
  }
  Var o1, o2;
  ASSERT_CH_OK(ch_function_output(o1.out(), c1, 0));
  ASSERT_CH_OK(ch_function_output(o2.out(), c2, 0));
  EXPECT_EQ(data_ptr(o1), data_ptr(w1));
  EXPECT_EQ(data_ptr(o2), data_ptr(w2));
  EXPECT_NE(data_ptr(o1), data_ptr(o2));

  // Both backward correctly through one loss: l = sum(w1 + w2).
  Var t, l;
  ASSERT_CH_OK(ch_functions_add(t.out(), w1, w2));
  ASSERT_CH_OK(ch_functions_sum(l.out(), t));
  ASSERT_CH_OK(ch_variable_backward(l, 0));
  EXPECT_TRUE(AllClose(grad_of(x1), {3, 4}, 0, 0));  // gx = y
  EXPECT_TRUE(AllClose(grad_of(y1), {1, 2}, 0, 0));  // gy = x
  EXPECT_TRUE(AllClose(grad_of(z1), {1, 1}, 0, 0));
  EXPECT_TRUE(AllClose(grad_of(x2), {7, 8}, 0, 0));
  EXPECT_TRUE(AllClose(grad_of(y2), {-1, -2}, 0, 0));
  EXPECT_EQ(probe.backward_calls.load(), 2);
}

TEST_F(CustomFunctions, SameObjectTwiceInOneChain) {
  // v = MulAdd(MulAdd(x, y, z), y, z) = (x*y + z)*y + z with one object:
  // dv/dx = y^2, dv/dy = 2xy + z, dv/dz = y + 1 (hand-derived). Each node
  // must use the inputs of its own application.
  Probe probe;
  Fn f = make_muladd(&probe);
  Var x = var_f64({1}, {2}), y = var_f64({1}, {3}), z = var_f64({1}, {5});
  Var w = apply1(f, {x, y, z});
  Var v = apply1(f, {w, y, z});
  EXPECT_TRUE(AllClose(data_of(v), {(2 * 3 + 5) * 3 + 5}, 0, 0));
  ASSERT_CH_OK(ch_variable_backward(v, 0));
  EXPECT_TRUE(AllClose(grad_of(x), {9}, 0, 0));
  EXPECT_TRUE(AllClose(grad_of(y), {2 * 2 * 3 + 5}, 0, 0));
  EXPECT_TRUE(AllClose(grad_of(z), {4}, 0, 0));
}

TEST_F(CustomFunctions, ApplicationNodeCanBeAppliedAgain) {
  // function.h: "ch_variable_creator returns such a node, also as a
  // ch_function, which can be inspected and applied again."
  Probe probe;
  {
    Fn f = make_muladd(&probe);
    Var x = var_f32({1}, {2}), y = var_f32({1}, {3}), z = var_f32({1}, {1});
    Var w = apply1(f, {x, y, z});
    Fn node;
    ASSERT_CH_OK(ch_variable_creator(node.out(), w));
    f.reset();                         // only the node keeps the definition alive now
    Var w2 = apply1(node, {y, y, x});  // 3*3 + 2
    EXPECT_TRUE(AllClose(data_of(w2), {11}, 0, 0));
    EXPECT_EQ(creator_name(w2), "MulAdd");
    Fn node2;
    ASSERT_CH_OK(ch_variable_creator(node2.out(), w2));
    Var in0;
    ASSERT_CH_OK(ch_function_input(in0.out(), node2, 2));
    EXPECT_EQ(data_ptr(in0), data_ptr(x));
    // The first node still describes the first application.
    ASSERT_CH_OK(ch_function_input(in0.out(), node, 2));
    EXPECT_EQ(data_ptr(in0), data_ptr(z));
    ASSERT_CH_OK(ch_variable_backward(w2, 0));
    EXPECT_TRUE(AllClose(grad_of(y), {6}, 0, 0));  // d(y*y + x)/dy = 2y
    EXPECT_TRUE(AllClose(grad_of(x), {1}, 0, 0));
    EXPECT_EQ(probe.destroyed.load(), 0);
  }
  EXPECT_EQ(probe.destroyed.load(), 1);
}

TEST_F(CustomFunctions, UserDataDestroyedOnceAfterEverythingInAnyOrder) {
  // function.h: destroy is "called once, when the object and every
  // application of it are gone". Try every order of releasing the object,
  // two outputs and their two creator nodes.
  std::vector<int> order = {0, 1, 2, 3, 4};
  int permutations = 0;
  do {
    Probe probe;
    Var x = var_f32({1}, {2}), y = var_f32({1}, {3}), z = var_f32({1}, {1});
    ch_function* f = make_muladd(&probe).release();
    ch_variable* in[] = {x, y, z};
    ch_variable *w1 = nullptr, *w2 = nullptr;
    ASSERT_CH_OK(ch_function_apply(f, in, 3, &w1, 1, nullptr));
    ASSERT_CH_OK(ch_function_apply(f, in, 3, &w2, 1, nullptr));
    ch_function *c1 = nullptr, *c2 = nullptr;
    ASSERT_CH_OK(ch_variable_creator(&c1, w1));
    ASSERT_CH_OK(ch_variable_creator(&c2, w2));
    for (size_t k = 0; k < order.size(); ++k) {
      EXPECT_EQ(probe.destroyed.load(), 0) << "destroyed too early (step " << k << ")";
      switch (order[k]) {
        case 0:
          EXPECT_CH_OK(ch_function_release(f));
          break;
        case 1:
          EXPECT_CH_OK(ch_variable_release(w1));
          break;
        case 2:
          EXPECT_CH_OK(ch_variable_release(w2));
          break;
        case 3:
          EXPECT_CH_OK(ch_function_release(c1));
          break;
        case 4:
          EXPECT_CH_OK(ch_function_release(c2));
          break;
      }
    }
    EXPECT_EQ(probe.destroyed.load(), 1);
    ++permutations;
  } while (std::next_permutation(order.begin(), order.end()));
  EXPECT_EQ(permutations, 120);
}

TEST_F(CustomFunctions, FailedNewDoesNotCallDestroy) {
  // function.h: "On failure def->destroy is NOT called."
  Probe probe;
  ch_function_def def{};
  def.version = CH_FUNCTION_DEF_VERSION;
  def.name = "NoForward";
  def.user_data = &probe;
  def.destroy = probe_destroy;
  ch_function* f = reinterpret_cast<ch_function*>(0x1);
  EXPECT_CH_ERR(CH_ERR_INVALID_ARGUMENT, ch_function_new(&f, &def));
  EXPECT_EQ(f, nullptr);
  def.version = 0;
  EXPECT_CH_ERR(CH_ERR_INVALID_ARGUMENT, ch_function_new(&f, &def));
  def.version = CH_FUNCTION_DEF_VERSION + 1;
  EXPECT_CH_ERR(CH_ERR_INVALID_ARGUMENT, ch_function_new(&f, &def));
  EXPECT_CH_ERR(CH_ERR_INVALID_ARGUMENT, ch_function_new(&f, nullptr));
  EXPECT_CH_ERR(CH_ERR_INVALID_ARGUMENT, ch_function_new(nullptr, &def));
  EXPECT_EQ(probe.destroyed.load(), 0);
}

TEST_F(CustomFunctions, DefIsCopied) {
  // function.h: the def is copied, and its name too: the caller may reuse both.
  std::string name = "Copied";
  ch_function_def def{};
  def.version = CH_FUNCTION_DEF_VERSION;
  def.name = name.c_str();
  def.forward = [](void*, ch_context* ctx, ch_array* const* in, size_t) -> ch_status {
    return ch_context_add_output(ctx, in[0]);
  };
  Fn f;
  ASSERT_CH_OK(ch_function_new(f.out(), &def));
  name.assign("Overwritten and longer than before");
  def.forward = nullptr;
  def.name = "Other";
  EXPECT_STREQ(ch_function_name(f), "Copied");
  Var x = var_f32({1}, {7});
  Var y = apply1(f, {x});
  EXPECT_TRUE(AllClose(data_of(y), {7}, 0, 0));
}

// ---- the per-application context -----------------------------------------------------

struct CtxCounters {
  std::atomic<int> user_data_destroyed{0};
};
void ctx_destroy(void* p) { static_cast<CtxCounters*>(p)->user_data_destroyed++; }

// SavedExp: y = exp(x), keeping y (an OUTPUT) in the context for backward:
// gx = gy * y. Also sets per-application user data.
struct SavedExp {
  Lambda lambda;
  CtxCounters counters;
  std::atomic<int> saved_ok{0};
  bool save_output = true;
  SavedExp() {
    lambda.forward = [this](ch_context* ctx, ch_array* const* in, size_t) -> ch_status {
      ch_array* y = nullptr;
      ch_status st = new_like(&y, in[0]);
      if (st != CH_OK) return st;
      for (int64_t i = 0; i < ch_array_size(in[0]); ++i)
        mdata<double>(y)[i] = std::exp(cdata<double>(in[0])[i]);
      st = ch_context_add_output(ctx, y);
      if (st == CH_OK && save_output) st = ch_context_save(ctx, y);
      ch_array_release(y);
      if (st == CH_OK) st = ch_context_set_user_data(ctx, &counters, ctx_destroy);
      if (st == CH_OK) {
        EXPECT_EQ(ch_context_user_data(ctx), &counters);
      }
      return st;
    };
    lambda.backward = [this](ch_context* ctx, ch_array* const* in, size_t, ch_array* const* out,
                             size_t, ch_array* const* gout, size_t) -> ch_status {
      EXPECT_EQ(ch_context_user_data(ctx), &counters) << "forward's user data reaches backward";
      EXPECT_EQ(ch_context_saved_count(ctx), 1u);
      ch_array* y = nullptr;
      ch_status st = ch_context_saved(&y, ctx, 0);
      if (st != CH_OK) return st;
      EXPECT_EQ(ch_array_data(y), ch_array_data(out[0])) << "the saved array is the output itself";
      ch_array* bad = nullptr;
      EXPECT_EQ(ch_context_saved(&bad, ctx, 1), CH_ERR_INVALID_ARGUMENT);
      EXPECT_EQ(bad, nullptr);
      ch_array* gx = nullptr;
      st = new_like(&gx, in[0]);
      if (st == CH_OK) {
        for (int64_t i = 0; i < ch_array_size(in[0]); ++i)
          mdata<double>(gx)[i] = cdata<double>(gout[0])[i] * cdata<double>(y)[i];
        st = ch_context_set_grad_input(ctx, 0, gx);
        ch_array_release(gx);
      }
      ch_array_release(y);
      saved_ok++;
      return st;
    };
  }
};

TEST_F(CustomFunctions, ContextSaveAndUserData) {
  const int64_t arrays_before = ch_debug_live_arrays();
  SavedExp se;
  {
    Fn f = make_lambda_fn("SavedExp", &se.lambda);
    Var x = var_f64({3}, {0, 1, -1});
    Var y = apply1(f, {x});
    EXPECT_TRUE(AllClose(data_of(y), {1, std::exp(1.0), std::exp(-1.0)}, 1e-15, 1e-15));
    Arr ones = full(CH_FLOAT64, {3}, 1.0);
    ASSERT_CH_OK(ch_variable_set_grad(y, ones));
    ASSERT_CH_OK(ch_variable_backward(y, 0));
    EXPECT_TRUE(AllClose(grad_of(x), {1, std::exp(1.0), std::exp(-1.0)}, 1e-15, 1e-15));
    // Backward again after the same forward: the saved array is still there.
    ASSERT_CH_OK(ch_variable_backward(y, 0));
    EXPECT_TRUE(AllClose(grad_of(x), {1, std::exp(1.0), std::exp(-1.0)}, 1e-15, 1e-15));
    EXPECT_EQ(se.saved_ok.load(), 2);
    EXPECT_EQ(se.counters.user_data_destroyed.load(), 0);

    // The context's function is the application (inspectable during backward).
    Fn node;
    ASSERT_CH_OK(ch_variable_creator(node.out(), y));
    EXPECT_STREQ(ch_function_name(node), "SavedExp");

    // Releasing the output frees the application (no cycle through the
    // saved output), although the function object is still alive.
    node.reset();
    y.reset();
    EXPECT_EQ(se.counters.user_data_destroyed.load(), 1)
        << "the application was not freed: a cycle through its saved output?";
    EXPECT_TRUE(f);
  }
  EXPECT_EQ(se.lambda.destroyed.load(), 1);
  EXPECT_EQ(se.counters.user_data_destroyed.load(), 1);
  EXPECT_EQ(ch_debug_live_arrays(), arrays_before);
}

TEST_F(CustomFunctions, ContextUserDataPerApplication) {
  // Each application has its own context: two applications, two user data
  // destroys, each when its own graph goes.
  SavedExp se;
  Fn f = make_lambda_fn("SavedExp", &se.lambda);
  Var x = var_f64({1}, {0});
  Var y1 = apply1(f, {x});
  Var y2 = apply1(f, {x});
  EXPECT_EQ(se.counters.user_data_destroyed.load(), 0);
  y1.reset();
  EXPECT_EQ(se.counters.user_data_destroyed.load(), 1);
  y2.reset();
  EXPECT_EQ(se.counters.user_data_destroyed.load(), 2);
  // On volatile inputs no node is kept: the context's user data goes at once.
  Var xv = var_f64({1}, {0}, true);
  Var yv = apply1(f, {xv});
  EXPECT_FALSE(has_creator(yv));
  EXPECT_EQ(ch_variable_is_volatile(yv), 1);
  EXPECT_EQ(se.counters.user_data_destroyed.load(), 3);
}

TEST_F(CustomFunctions, ContextUserDataReplaced) {
  // function.h: "Replacing it destroys the previous one."
  CtxCounters first, second;
  Lambda l;
  l.forward = [&](ch_context* ctx, ch_array* const* in, size_t) -> ch_status {
    EXPECT_EQ(ch_context_user_data(ctx), nullptr);
    EXPECT_CH_OK(ch_context_set_user_data(ctx, &first, ctx_destroy));
    EXPECT_CH_OK(ch_context_set_user_data(ctx, &second, ctx_destroy));
    EXPECT_EQ(first.user_data_destroyed.load(), 1);
    EXPECT_EQ(ch_context_user_data(ctx), &second);
    return ch_context_add_output(ctx, in[0]);
  };
  Fn f = make_lambda_fn("Replace", &l);
  Var x = var_f32({1}, {1});
  {
    Var y = apply1(f, {x});
    EXPECT_EQ(second.user_data_destroyed.load(), 0);
  }
  EXPECT_EQ(first.user_data_destroyed.load(), 1);
  EXPECT_EQ(second.user_data_destroyed.load(), 1);
}

TEST_F(CustomFunctions, SavedOutputCreatesNoCycle) {
  // Save the output array in the context, then drop every handle: all user
  // data is destroyed and the live handle count returns to the baseline.
  const int64_t baseline = ch_debug_live_handles();
  SavedExp se;
  {
    Fn f = make_lambda_fn("SavedExp", &se.lambda);
    Var x = var_f64({4}, {0, 1, 2, 3});
    Var y = apply1(f, {x});
    Var z;  // a built-in consumer as well
    ASSERT_CH_OK(ch_functions_sum(z.out(), y));
    ASSERT_CH_OK(ch_variable_backward(z, 0));
    EXPECT_GT(ch_debug_live_handles(), baseline);
  }
  EXPECT_EQ(se.counters.user_data_destroyed.load(), 1);
  EXPECT_EQ(se.lambda.destroyed.load(), 1);
  EXPECT_EQ(ch_debug_live_handles(), baseline);
}

TEST_F(CustomFunctions, ContextFunctionDuringCallbacks) {
  std::string fwd_name, bwd_name;
  size_t bwd_inputs = 99;
  Lambda l;
  l.forward = [&](ch_context* ctx, ch_array* const* in, size_t) -> ch_status {
    ch_function* self = nullptr;
    EXPECT_CH_OK(ch_context_function(&self, ctx));
    fwd_name = ch_function_name(self);
    ch_function_release(self);
    return ch_context_add_output(ctx, in[0]);
  };
  l.backward = [&](ch_context* ctx, ch_array* const*, size_t, ch_array* const*, size_t,
                   ch_array* const* gout, size_t) -> ch_status {
    ch_function* self = nullptr;
    EXPECT_CH_OK(ch_context_function(&self, ctx));
    bwd_name = ch_function_name(self);
    bwd_inputs = ch_function_input_count(self);
    ch_function_release(self);
    return ch_context_set_grad_input(ctx, 0, gout[0]);
  };
  Fn f = make_lambda_fn("Self", &l);
  Var x = var_f32({1}, {1});
  Var y = apply1(f, {x});
  ASSERT_CH_OK(ch_variable_backward(y, 0));
  EXPECT_EQ(fwd_name, "Self");
  EXPECT_EQ(bwd_name, "Self");
  EXPECT_EQ(bwd_inputs, 1u);
  EXPECT_TRUE(AllClose(grad_of(x), {1}, 0, 0));
}

TEST_F(CustomFunctions, ContextCallsInTheWrongPhaseFail) {
  // add_output only in forward; set_grad_input only in backward.
  ch_status add_in_backward = CH_OK, grad_in_forward = CH_OK;
  Lambda l;
  l.forward = [&](ch_context* ctx, ch_array* const* in, size_t) -> ch_status {
    grad_in_forward = ch_context_set_grad_input(ctx, 0, in[0]);
    return ch_context_add_output(ctx, in[0]);
  };
  l.backward = [&](ch_context* ctx, ch_array* const*, size_t, ch_array* const*, size_t,
                   ch_array* const* gout, size_t) -> ch_status {
    add_in_backward = ch_context_add_output(ctx, gout[0]);
    return ch_context_set_grad_input(ctx, 0, gout[0]);
  };
  Fn f = make_lambda_fn("Phases", &l);
  Var x = var_f32({1}, {1});
  Var y = apply1(f, {x});
  ASSERT_CH_OK(ch_variable_backward(y, 0));
  EXPECT_NE(grad_in_forward, CH_OK);
  EXPECT_NE(add_in_backward, CH_OK);
  EXPECT_TRUE(AllClose(grad_of(x), {1}, 0, 0));
}

}  // namespace
