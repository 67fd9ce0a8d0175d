// Double backprop through the built-in functions whose backward used to be
// fused kernels only (issue 41): lstm, PReLU, Convolution2D, EmbedID,
// Inception, max_pooling_2d, average_pooling_2d, BatchNormalization, and
// Linear's parameters. In float64:
//  - ch_check_double_backward (Chainer's check_double_backward): the first
//    backward taken with double backprop against central differences of the
//    function, then its own backward, as a function (x, gy) -> gx, against
//    central differences of that;
//  - the second-order gradients that reach the parameters: for the penalty
//    P = sum(v * dL/dx), L = sum(tanh(f(x))), the parameters' gradients
//    after backward(P) against central differences of P in each parameter
//    element (WGAN-GP's penalty trained through a layer);
//  - graphs of gradients are freed: the forward graph's user function is
//    destroyed and the bytes held by arrays are back to the start once every
//    handle is released (the fixture checks the handle counts).
// local_response_normalization and BinaryHierarchicalSoftmax have no double
// backward in Chainer 7 either (LocalResponseNormalizationGrad.backward
// raises NotImplementedError; BinaryHierarchicalSoftmaxFunction is an
// old-style Function): CH_ERR_GRAPH naming the function.
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "capi_test_util.h"

using namespace capi_test;

namespace {

class DoubleBackpropFunctions : public CapiTest {};

using Builder = std::function<ch_status(ch_variable* const*, ch_variable**)>;
ch_status run_builder(void* ud, ch_variable* const* in, size_t, ch_variable** out, size_t) {
  return (*static_cast<Builder*>(ud))(in, out);
}

size_t count(const std::vector<int64_t>& shape) {
  size_t n = 1;
  for (int64_t e : shape) n *= static_cast<size_t>(e);
  return n;
}

// Smooth pseudo-random values in (-scale, scale), reproducible from `seed`.
Arr wave(std::vector<int64_t> shape, double seed, double scale = 0.9) {
  std::vector<double> v;
  for (size_t i = 0; i < count(shape); ++i)
    v.push_back(scale * std::sin(1.7 * static_cast<double>(i) + seed));
  return f64(std::move(shape), v);
}

// Pairwise distinct values in (-1, 1), 2 / n apart and none 0 (no ties for
// the max pooling's numerical differences to straddle, no kink of PReLU).
Arr distinct(std::vector<int64_t> shape) {
  const size_t n = count(shape);
  std::vector<double> v;
  for (size_t i = 0; i < n; ++i)
    v.push_back((2.0 * static_cast<double>((i * 7919) % n) + 0.5) / static_cast<double>(n) - 1.0);
  return f64(std::move(shape), v);
}

ch_status check_double(Builder f, std::vector<ch_array*> inputs, std::vector<ch_array*> gys,
                       std::vector<ch_array*> ggxs) {
  return ch_check_double_backward(run_builder, &f, inputs.data(), inputs.size(), gys.data(),
                                  gys.size(), ggxs.data(), ggxs.size(), 1e-4, 1e-6, 1e-5);
}

// out = tanh(y), releasing y; st passes through. y by reference: read after
// the call that sets it (an argument beside it) has run.
ch_status then_tanh(ch_status st, ch_variable*& y, ch_variable** out) {
  if (st == CH_OK) st = ch_functions_tanh(out, y);
  ch_variable_release(y);
  return st;
}
// out = y * y, releasing y.
ch_status then_square(ch_status st, ch_variable*& y, ch_variable** out) {
  if (st == CH_OK) st = ch_functions_mul(out, y, y);
  ch_variable_release(y);
  return st;
}

ch_status apply(ch_function* f, ch_variable* x, ch_variable** y) {
  ch_variable* in[] = {x};
  return ch_function_apply(f, in, 1, y, 1, nullptr);
}

// tanh(f(x)) for a function object f of one input.
Builder tanh_of(ch_function* f) {
  return [f](ch_variable* const* in, ch_variable** out) {
    ch_variable* y = nullptr;
    return then_tanh(apply(f, in[0], &y), y, out);
  };
}

TEST_F(DoubleBackpropFunctions, Lstm) {
  // (N, U) and (N, U, 3): gates interleaved along axis 1 with trailing axes.
  for (const std::vector<int64_t>& cs : {std::vector<int64_t>{2, 3}, {2, 2, 3}}) {
    std::vector<int64_t> xs = cs;
    xs[1] *= 4;
    SCOPED_TRACE("c_prev " + std::to_string(cs.size()) + "-d");
    Arr cp = wave(cs, 0.3), x = wave(xs, 1.1, 1.5);
    Arr gc = wave(cs, 2.0), gh = wave(cs, 2.7), ggc = wave(cs, 3.1), ggx = wave(xs, 4.2);
    Builder f = [](ch_variable* const* in, ch_variable** out) {
      return ch_functions_lstm(&out[0], &out[1], in[0], in[1]);
    };
    EXPECT_CH_OK(check_double(f, {cp, x}, {gc, gh}, {ggc, ggx}));
    // Through h alone (c's gradient arrives as zeros).
    Builder h_only = [](ch_variable* const* in, ch_variable** out) {
      ch_variable* c = nullptr;
      ch_status st = ch_functions_lstm(&c, out, in[0], in[1]);
      ch_variable_release(c);
      return st;
    };
    EXPECT_CH_OK(check_double(h_only, {cp, x}, {gh}, {ggc, ggx}));
  }
}

TEST_F(DoubleBackpropFunctions, PRelu) {
  Fn per_channel, single;
  const int64_t s[] = {3};
  ASSERT_CH_OK(ch_functions_prelu_new(per_channel.out(), s, 1, CH_FLOAT64, 0.25));
  ASSERT_CH_OK(ch_functions_prelu_new(single.out(), nullptr, 0, CH_FLOAT64, -0.4));
  Arr x = distinct({2, 3, 2}), gy = wave({2, 3, 2}, 0.5), ggx = wave({2, 3, 2}, 1.5);
  EXPECT_CH_OK(check_double(tanh_of(per_channel), {x}, {gy}, {ggx}));
  EXPECT_CH_OK(check_double(tanh_of(single), {x}, {gy}, {ggx}));
}

Fn make_conv(bool nobias) {
  Arr W = wave({3, 2, 3, 2}, 0.7, 0.5), b = wave({3}, 0.1, 0.3);
  Fn conv;
  EXPECT_CH_OK(ch_functions_convolution_2d_new(conv.out(), 2, 3, 3, 2, 2, 1, 1, 0, CH_FLOAT64, 1.0,
                                               0.0, nobias, W, nobias ? nullptr : b.get()));
  return conv;
}

TEST_F(DoubleBackpropFunctions, Convolution2D) {
  for (bool nobias : {false, true}) {
    SCOPED_TRACE(nobias ? "nobias" : "with bias");
    Fn conv = make_conv(nobias);  // 3x2 kernel, stride (2, 1), pad (1, 0)
    Arr x = wave({2, 2, 5, 4}, 0.2), gy = wave({2, 3, 3, 3}, 1.3), ggx = wave({2, 2, 5, 4}, 2.9);
    EXPECT_CH_OK(check_double(tanh_of(conv), {x}, {gy}, {ggx}));
  }
}

TEST_F(DoubleBackpropFunctions, EmbedId) {
  Arr W = wave({5, 4}, 0.4);
  Fn embed;
  ASSERT_CH_OK(ch_functions_embed_id_new(embed.out(), 5, 4, CH_FLOAT64, W));
  Arr ids;
  const int64_t n[] = {3};
  const int32_t id_values[] = {4, 0, 4};
  ASSERT_CH_OK(ch_array_new(ids.out(), CH_INT32, n, 1, id_values, cpu()));
  // tanh(x * embed(ids)): the second derivative in x passes the embedding.
  Builder f = [&](ch_variable* const* in, ch_variable** out) {
    ch_variable *e = nullptr, *p = nullptr;
    ch_status st = apply(embed, in[1], &e);
    if (st == CH_OK) st = ch_functions_mul(&p, in[0], e);
    ch_variable_release(e);
    return then_tanh(st, p, out);
  };
  Arr x = wave({3, 4}, 1.0, 1.2), gy = wave({3, 4}, 2.0), ggx = wave({3, 4}, 3.0);
  EXPECT_CH_OK(check_double(f, {x, ids}, {gy}, {ggx, nullptr}));
}

Fn make_inception() {
  Fn inc;
  EXPECT_CH_OK(ch_functions_inception_new(inc.out(), 2, 2, 1, 2, 1, 1, 2, CH_FLOAT64));
  // Away from the default initialisation's scale, reproducibly.
  for (size_t i = 0; i < ch_function_parameter_count(inc); ++i) {
    Arr p;
    EXPECT_CH_OK(ch_function_parameter(p.out(), nullptr, nullptr, inc, i));
    std::vector<int64_t> shape = shape_of(p);
    Arr v = wave(shape, 0.37 * static_cast<double>(i), 0.6);
    EXPECT_CH_OK(ch_array_copy_from(p, v));
  }
  return inc;
}

TEST_F(DoubleBackpropFunctions, Inception) {
  Fn inc = make_inception();
  Arr x = distinct({1, 2, 4, 4}), gy = wave({1, 7, 4, 4}, 0.9), ggx = wave({1, 2, 4, 4}, 1.9);
  EXPECT_CH_OK(check_double(tanh_of(inc), {x}, {gy}, {ggx}));
}

TEST_F(DoubleBackpropFunctions, Pooling) {
  struct Geometry {
    int64_t kh, kw, sy, sx, ph, pw;
    int32_t cover_all;
  };
  const Geometry geometries[] = {
      {2, 2, 2, 2, 0, 0, 0}, {3, 3, 2, 2, 1, 1, 1}, {3, 2, 1, 2, 1, 0, 0}};
  const std::vector<int64_t> xs{2, 2, 5, 5};
  for (const Geometry& g : geometries) {
    SCOPED_TRACE("window " + std::to_string(g.kh) + "x" + std::to_string(g.kw) + " stride " +
                 std::to_string(g.sy) + "x" + std::to_string(g.sx));
    Arr x = distinct(xs), ggx = wave(xs, 0.6);
    // max(x)^2 and mean(x)^2: second derivatives through the pooling's routing.
    Builder max_sq = [&](ch_variable* const* in, ch_variable** out) {
      ch_variable* y = nullptr;
      return then_square(
          ch_functions_max_pooling_2d(&y, in[0], g.kh, g.kw, g.sy, g.sx, g.ph, g.pw, g.cover_all),
          y, out);
    };
    Builder avg_sq = [&](ch_variable* const* in, ch_variable** out) {
      ch_variable* y = nullptr;
      return then_square(
          ch_functions_average_pooling_2d(&y, in[0], g.kh, g.kw, g.sy, g.sx, g.ph, g.pw), y, out);
    };
    // The outputs' shapes, for upstream gradients that are not ones.
    Var probe = make_var(x), pm, pa;
    ASSERT_CH_OK(ch_functions_max_pooling_2d(pm.out(), probe, g.kh, g.kw, g.sy, g.sx, g.ph, g.pw,
                                             g.cover_all));
    ASSERT_CH_OK(
        ch_functions_average_pooling_2d(pa.out(), probe, g.kh, g.kw, g.sy, g.sx, g.ph, g.pw));
    Arr dm, da;
    ASSERT_CH_OK(ch_variable_data(dm.out(), pm));
    ASSERT_CH_OK(ch_variable_data(da.out(), pa));
    Arr gym = wave(shape_of(dm), 1.4), gya = wave(shape_of(da), 2.4);
    EXPECT_CH_OK(check_double(max_sq, {x}, {gym}, {ggx}));
    EXPECT_CH_OK(check_double(avg_sq, {x}, {gya}, {ggx}));
  }
}

TEST_F(DoubleBackpropFunctions, BatchNormalization) {
  struct Case {
    std::vector<int64_t> size, x;
    int32_t mode;
  };
  const Case cases[] = {{{3}, {4, 3}, CH_MODE_TRAIN},
                        {{3}, {2, 3, 2, 2}, CH_MODE_TRAIN},
                        {{2, 2}, {3, 2, 2, 2}, CH_MODE_TRAIN},
                        {{3}, {2, 3, 2}, CH_MODE_TEST}};
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(c.mode == CH_MODE_TRAIN ? "train" : "test") + " x " +
                 std::to_string(c.x.size()) + "-d");
    Fn bn;
    ASSERT_CH_OK(ch_functions_batch_normalization_new(
        bn.out(), c.size.data(), static_cast<int32_t>(c.size.size()), 0.9, 1e-5, CH_FLOAT64));
    // gamma and beta away from ones and zeros; positive running variances.
    for (size_t i = 0; i < 2; ++i) {
      Arr p;
      ASSERT_CH_OK(ch_function_parameter(p.out(), nullptr, nullptr, bn, i));
      Arr v = wave(c.size, 0.5 + static_cast<double>(i), 0.8);
      ASSERT_CH_OK(ch_array_copy_from(p, v));
    }
    Arr avg_mean, avg_var;
    ASSERT_CH_OK(ch_functions_batch_normalization_state(avg_mean.out(), avg_var.out(), bn));
    ASSERT_CH_OK(ch_array_fill(avg_mean, 0.2));
    ASSERT_CH_OK(ch_array_fill(avg_var, 1.7));
    const int32_t mode = c.mode;
    Builder f = [&](ch_variable* const* in, ch_variable** out) {
      ch_variable* y = nullptr;
      return then_tanh(ch_functions_batch_normalization_apply(&y, bn, in[0], mode, 0), y, out);
    };
    Arr x = wave(c.x, 0.1, 1.5), gy = wave(c.x, 1.2), ggx = wave(c.x, 2.3);
    EXPECT_CH_OK(check_double(f, {x}, {gy}, {ggx}));
  }
}

// The gradient functions' own graph backwards (third order: the gradient of
// the gradient as a graph): check_double_backward of (x, gy) -> dL/dx, the
// first backward taken with double backprop; its first check runs the
// graph backwards of the functions that make up dL/dx (Conv2DGradX,
// MaxPooling2DGrad, AveragePooling2DGrad, ...), its second their backwards.
TEST_F(DoubleBackpropFunctions, GradientsAreTwiceDifferentiable) {
  Fn conv = make_conv(false), bn, pr;
  const int64_t s3[] = {3};
  ASSERT_CH_OK(ch_functions_batch_normalization_new(bn.out(), s3, 1, 0.9, 1e-5, CH_FLOAT64));
  ASSERT_CH_OK(ch_functions_prelu_new(pr.out(), s3, 1, CH_FLOAT64, 0.3));
  struct Case {
    const char* name;
    Builder f;
    std::vector<int64_t> x, y;
  };
  const Builder max_sq = [](ch_variable* const* in, ch_variable** out) {
    ch_variable* y = nullptr;
    return then_square(ch_functions_max_pooling_2d(&y, in[0], 3, 3, 2, 2, 1, 1, 1), y, out);
  };
  const Builder avg_sq = [](ch_variable* const* in, ch_variable** out) {
    ch_variable* y = nullptr;
    return then_square(ch_functions_average_pooling_2d(&y, in[0], 3, 2, 2, 1, 1, 0), y, out);
  };
  const Builder lstm_h = [](ch_variable* const* in, ch_variable** out) {
    Var cp = var_f64({2, 2}, {0.3, -0.2, 0.5, 0.1}), c;
    return ch_functions_lstm(c.out(), out, cp, in[0]);
  };
  const Case cases[] = {
      {"Convolution2D", tanh_of(conv), {2, 2, 5, 4}, {2, 3, 3, 3}},
      {"max_pooling_2d", max_sq, {1, 2, 5, 5}, {1, 2, 3, 3}},
      {"average_pooling_2d", avg_sq, {1, 2, 5, 5}, {1, 2, 3, 4}},
      {"BatchNormalization", tanh_of(bn), {4, 3}, {4, 3}},
      {"PReLU", tanh_of(pr), {2, 3, 2}, {2, 3, 2}},
      {"lstm", lstm_h, {2, 8}, {2, 2}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const Builder& f = c.f;
    // The checker evaluates the function on volatile inputs for its
    // numerical differences: a gradient needs a graph, so those evaluations
    // take it of non-volatile roots holding the same data (the same value).
    Builder gradient = [&f](ch_variable* const* in, ch_variable** out) {
      Var roots[2];
      ch_variable* use[2] = {in[0], in[1]};
      if (ch_variable_is_volatile(in[0]))
        for (int i = 0; i < 2; ++i) {
          Arr data;
          ch_status st = ch_variable_data(data.out(), in[i]);
          if (st == CH_OK) st = ch_variable_new(roots[i].out(), data, 0);
          if (st != CH_OK) return st;
          use[i] = roots[i];
        }
      ch_variable* y = nullptr;
      ch_status st = f(use, &y);
      ch_variable* outs[] = {y};
      ch_variable* xs[] = {use[0]};
      ch_variable* seeds[] = {use[1]};
      ch_backward_options opt = CH_BACKWARD_OPTIONS_INIT;
      opt.enable_double_backprop = 1;
      if (st == CH_OK) st = ch_grad(out, outs, 1, xs, 1, seeds, &opt);
      ch_variable_release(y);
      return st;
    };
    Arr x = distinct(c.x), gy = wave(c.y, 0.8), ggx = wave(c.x, 1.6), gggx = wave(c.x, 2.6),
        gggy = wave(c.y, 3.6);
    EXPECT_CH_OK(check_double(gradient, {x, gy}, {ggx}, {gggx, gggy}));
  }
}

// ---- second-order gradients that reach the parameters

// P(params) = sum(v * dL/dx) with L = sum(tanh(f(x))): its value, and
// with `backward`, backward(P) run (the parameters' gradients take it).
double penalty(ch_function* f, ch_array* xa, ch_array* va, bool backward) {
  Var x = make_var(xa), v = make_var(va), y, t, l, g, gv, p;
  EXPECT_CH_OK(apply(f, x, y.out()));
  EXPECT_CH_OK(ch_functions_tanh(t.out(), y));
  EXPECT_CH_OK(ch_functions_sum(l.out(), t));
  ch_variable* outs[] = {l};
  ch_variable* ins[] = {x};
  ch_backward_options opt = CH_BACKWARD_OPTIONS_INIT;
  opt.enable_double_backprop = 1;
  EXPECT_CH_OK(ch_grad(g.out(), outs, 1, ins, 1, nullptr, &opt));
  EXPECT_CH_OK(ch_functions_mul(gv.out(), g, v));
  EXPECT_CH_OK(ch_functions_sum(p.out(), gv));
  if (backward) EXPECT_CH_OK(ch_variable_backward(p, 0));
  std::vector<double> value = data_of(p);
  return value.empty() ? NAN : value[0];
}

// The parameters' gradients of the penalty against central differences.
void expect_penalty_gradients(ch_function* f, ch_array* x, ch_array* v) {
  const size_t n = ch_function_parameter_count(f);
  std::vector<Arr> params(n), grads(n);
  for (size_t i = 0; i < n; ++i) {
    ASSERT_CH_OK(ch_function_parameter(params[i].out(), grads[i].out(), nullptr, f, i));
    ASSERT_CH_OK(ch_array_fill(grads[i], 0));
  }
  penalty(f, x, v, true);
  double norm = 0;
  for (size_t i = 0; i < n; ++i) {
    const char* name = nullptr;
    ASSERT_CH_OK(ch_function_parameter(nullptr, nullptr, &name, f, i));
    SCOPED_TRACE(std::string("parameter ") + name);
    std::vector<double> analytic = values(grads[i]), numeric;
    auto* p = static_cast<double*>(ch_array_data(params[i]));
    for (size_t k = 0; k < analytic.size(); ++k) {
      const double keep = p[k], e = 1e-5;
      p[k] = keep + e;
      const double up = penalty(f, x, v, false);
      p[k] = keep - e;
      const double down = penalty(f, x, v, false);
      p[k] = keep;
      numeric.push_back((up - down) / (2 * e));
      norm += numeric.back() * numeric.back();
    }
    EXPECT_TRUE(AllClose(analytic, numeric, 1e-6, 1e-5));
  }
  EXPECT_GT(norm, 1e-6) << "a penalty that does not depend on the parameters checks nothing";
}

TEST_F(DoubleBackpropFunctions, PenaltyGradientsReachParameters) {
  {
    SCOPED_TRACE("Linear");
    Arr W = wave({3, 4}, 0.3, 0.7), b = wave({3}, 1.0, 0.4);
    Fn lin;
    ASSERT_CH_OK(ch_functions_linear_new(lin.out(), 4, 3, CH_FLOAT64, 1.0, 0, 0, W, b));
    Arr x = wave({2, 4}, 0.8), v = wave({2, 4}, 1.9);
    expect_penalty_gradients(lin, x, v);
  }
  {
    SCOPED_TRACE("PReLU");
    Fn pr;
    const int64_t s[] = {3};
    ASSERT_CH_OK(ch_functions_prelu_new(pr.out(), s, 1, CH_FLOAT64, 0.3));
    Arr x = distinct({2, 3, 2}), v = wave({2, 3, 2}, 1.9);
    expect_penalty_gradients(pr, x, v);
  }
  {
    SCOPED_TRACE("Convolution2D");
    Fn conv = make_conv(false);
    Arr x = wave({2, 2, 5, 4}, 0.2), v = wave({2, 2, 5, 4}, 1.1);
    expect_penalty_gradients(conv, x, v);
  }
  {
    SCOPED_TRACE("Inception");
    Fn inc = make_inception();
    Arr x = distinct({1, 2, 4, 4}), v = wave({1, 2, 4, 4}, 0.4);
    expect_penalty_gradients(inc, x, v);
  }
  {
    SCOPED_TRACE("BatchNormalization");
    Fn bn;
    const int64_t s[] = {3};
    ASSERT_CH_OK(ch_functions_batch_normalization_new(bn.out(), s, 1, 0.9, 1e-5, CH_FLOAT64));
    for (size_t i = 0; i < 2; ++i) {
      Arr p;
      ASSERT_CH_OK(ch_function_parameter(p.out(), nullptr, nullptr, bn, i));
      Arr w = wave({3}, 0.5 + static_cast<double>(i), 0.8);
      ASSERT_CH_OK(ch_array_copy_from(p, w));
    }
    Arr x = wave({4, 3}, 0.1, 1.5), v = wave({4, 3}, 2.2);
    expect_penalty_gradients(bn, x, v);
  }
}

// Functions without a float input: EmbedID's W and Parameter's W, with
// P = sum(v * d/dx sum(tanh(x * e))), e = embed(ids) or the parameter.
TEST_F(DoubleBackpropFunctions, PenaltyGradientReachesEmbedIdAndParameterWeights) {
  for (bool embedding : {true, false}) {
    SCOPED_TRACE(embedding ? "EmbedID" : "Parameter");
    Arr W0 = wave({5, 4}, 0.4), P0 = wave({2, 4}, 0.7);
    Fn embed;
    if (embedding) {
      ASSERT_CH_OK(ch_functions_embed_id_new(embed.out(), 5, 4, CH_FLOAT64, W0));
    } else {
      ASSERT_CH_OK(ch_functions_parameter_new(embed.out(), P0));
    }
    Arr ids, xa = wave({2, 4}, 1.0, 1.2), va = wave({2, 4}, 2.0);
    const int64_t n[] = {2};
    const int32_t id_values[] = {3, 1};
    ASSERT_CH_OK(ch_array_new(ids.out(), CH_INT32, n, 1, id_values, cpu()));
    auto value = [&](bool backward) {
      Var x = make_var(xa), v = make_var(va), t = make_var(ids), e, m, th, l, g, gv, p;
      if (embedding) {
        EXPECT_CH_OK(apply(embed, t, e.out()));
      } else {
        EXPECT_CH_OK(ch_function_apply(embed, nullptr, 0, e.out(), 1, nullptr));
      }
      EXPECT_CH_OK(ch_functions_mul(m.out(), x, e));
      EXPECT_CH_OK(ch_functions_tanh(th.out(), m));
      EXPECT_CH_OK(ch_functions_sum(l.out(), th));
      ch_variable* outs[] = {l};
      ch_variable* ins[] = {x};
      ch_backward_options opt = CH_BACKWARD_OPTIONS_INIT;
      opt.enable_double_backprop = 1;
      EXPECT_CH_OK(ch_grad(g.out(), outs, 1, ins, 1, nullptr, &opt));
      EXPECT_CH_OK(ch_functions_mul(gv.out(), g, v));
      EXPECT_CH_OK(ch_functions_sum(p.out(), gv));
      if (backward) EXPECT_CH_OK(ch_variable_backward(p, 0));
      return data_of(p)[0];
    };
    Arr W, gW;
    ASSERT_CH_OK(ch_function_parameter(W.out(), gW.out(), nullptr, embed, 0));
    ASSERT_CH_OK(ch_array_fill(gW, 0));
    value(true);
    std::vector<double> analytic = values(gW), numeric;
    auto* p = static_cast<double*>(ch_array_data(W));
    for (size_t k = 0; k < analytic.size(); ++k) {
      const double keep = p[k];
      p[k] = keep + 1e-5;
      const double up = value(false);
      p[k] = keep - 1e-5;
      const double down = value(false);
      p[k] = keep;
      numeric.push_back((up - down) / 2e-5);
    }
    EXPECT_TRUE(AllClose(analytic, numeric, 1e-6, 1e-5));
    // Rows of ids that were not looked up get nothing.
    if (embedding) {
      for (size_t k : {0u, 8u, 16u}) EXPECT_EQ(analytic[k], 0.0) << k;
    }
  }
}

// backward_ex with double backprop through the function built by `f` (a
// user identity in front, whose destruction shows the forward graph gone),
// then the gradient of sum(x.grad_var^2) through it; afterwards every array
// is freed.
struct Sentinel {
  int destroyed = 0;
};
ch_status identity_forward(void*, ch_context* ctx, ch_array* const* in, size_t) {
  return ch_context_add_output(ctx, in[0]);
}
ch_status identity_backward(void*, ch_context* ctx, ch_array* const*, size_t, ch_array* const*,
                            size_t, ch_array* const* gy, size_t) {
  return ch_context_set_grad_input(ctx, 0, gy[0]);
}
ch_status identity_graph_backward(void*, ch_context*, ch_variable* const*, size_t,
                                  ch_variable* const*, size_t, ch_variable* const* gy, size_t,
                                  ch_variable** gx) {
  gx[0] = ch_variable_retain(gy[0]);
  return CH_OK;
}

void expect_graphs_freed(const Builder& f, ch_array* xa) {
  ch_memory_stats before{};
  ASSERT_CH_OK(ch_memory_stats_get(&before, cpu()));
  Sentinel s;
  {
    ch_function_def def{};
    def.version = CH_FUNCTION_DEF_VERSION;
    def.name = "Sentinel";
    def.forward = identity_forward;
    def.backward = identity_backward;
    def.graph_backward = identity_graph_backward;
    def.user_data = &s;
    def.destroy = [](void* p) { ++static_cast<Sentinel*>(p)->destroyed; };
    Fn id;
    ASSERT_CH_OK(ch_function_new(id.out(), &def));
    Var x = make_var(xa), x1, y, l, gsq, r;
    ASSERT_CH_OK(apply(id, x, x1.out()));
    ch_variable* in[] = {x1};
    ASSERT_CH_OK(f(in, y.out()));
    ASSERT_CH_OK(ch_functions_sum(l.out(), y));
    ch_backward_options opt = CH_BACKWARD_OPTIONS_INIT;
    opt.enable_double_backprop = 1;
    ASSERT_CH_OK(ch_variable_backward_ex(l, &opt));
    Var gx;
    ASSERT_CH_OK(ch_variable_grad_var(gx.out(), x));
    ASSERT_TRUE(gx);
    ASSERT_CH_OK(ch_functions_mul(gsq.out(), gx, gx));
    ASSERT_CH_OK(ch_functions_sum(r.out(), gsq));
    ASSERT_CH_OK(ch_variable_set_grad(x, nullptr));  // x -> grad_var -> x
    ASSERT_CH_OK(ch_variable_backward(r, 0));
    EXPECT_TRUE(has_grad(x));
    ASSERT_CH_OK(ch_variable_set_grad(x, nullptr));
  }
  EXPECT_EQ(s.destroyed, 1) << "a graph of gradients kept the forward graph alive";
  ch_memory_stats after{};
  ASSERT_CH_OK(ch_memory_stats_get(&after, cpu()));
  EXPECT_EQ(after.bytes_in_use, before.bytes_in_use) << "arrays of the graphs are still alive";
}

TEST_F(DoubleBackpropFunctions, GraphsOfGradientsAreFreed) {
  Fn pr, conv = make_conv(false), inc = make_inception(), bn, embed;
  const int64_t s3[] = {3}, s2[] = {2};
  ASSERT_CH_OK(ch_functions_prelu_new(pr.out(), s3, 1, CH_FLOAT64, 0.25));
  ASSERT_CH_OK(ch_functions_batch_normalization_new(bn.out(), s2, 1, 0.9, 1e-5, CH_FLOAT64));
  struct Case {
    const char* name;
    Builder f;
    Arr x;
  };
  std::vector<Case> cases;
  cases.push_back({"lstm",
                   [](ch_variable* const* in, ch_variable** out) {
                     Var cp = var_f64({1, 2}, {0.3, -0.2}), c;
                     return ch_functions_lstm(c.out(), out, cp, in[0]);
                   },
                   wave({1, 8}, 0.5)});
  cases.push_back({"PReLU", tanh_of(pr), distinct({2, 3, 2})});
  cases.push_back({"Convolution2D", tanh_of(conv), wave({2, 2, 5, 4}, 0.2)});
  cases.push_back({"Inception", tanh_of(inc), distinct({1, 2, 4, 4})});
  cases.push_back({"max_pooling_2d",
                   [](ch_variable* const* in, ch_variable** out) {
                     ch_variable* y = nullptr;
                     return then_square(ch_functions_max_pooling_2d(&y, in[0], 3, 3, 2, 2, 1, 1, 1),
                                        y, out);
                   },
                   distinct({1, 2, 5, 5})});
  cases.push_back({"average_pooling_2d",
                   [](ch_variable* const* in, ch_variable** out) {
                     ch_variable* y = nullptr;
                     return then_square(
                         ch_functions_average_pooling_2d(&y, in[0], 2, 2, 1, 1, 1, 1), y, out);
                   },
                   wave({1, 2, 4, 4}, 0.9)});
  cases.push_back({"BatchNormalization", tanh_of(bn), wave({4, 2}, 0.3, 1.5)});
  for (Case& c : cases) {
    SCOPED_TRACE(c.name);
    expect_graphs_freed(c.f, c.x);
  }
}

TEST_F(DoubleBackpropFunctions, LrnGradientIsAVariableButNotDifferentiable) {
  Arr xa = wave({2, 5, 3}, 0.4, 1.5), gya = wave({2, 5, 3}, 1.4);
  // The first backward with double backprop gives what the plain one gives.
  Var x = make_var(xa), y, gy = make_var(gya), g_plain, g_double;
  ASSERT_CH_OK(ch_functions_local_response_normalization(y.out(), x, 5, 2, 1e-2, 0.75));
  ch_variable* outs[] = {y};
  ch_variable* ins[] = {x};
  ch_variable* seeds[] = {gy};
  ASSERT_CH_OK(ch_grad(g_plain.out(), outs, 1, ins, 1, seeds, nullptr));
  ch_backward_options opt = CH_BACKWARD_OPTIONS_INIT;
  opt.enable_double_backprop = 1;
  ASSERT_CH_OK(ch_grad(g_double.out(), outs, 1, ins, 1, seeds, &opt));
  EXPECT_TRUE(AllClose(data_of(g_double), data_of(g_plain), 1e-12, 1e-12));
  EXPECT_EQ(creator_name(g_double), "LocalResponseNormalizationGrad");
  // Differentiating it again is CH_ERR_GRAPH naming the function, in both engines.
  Var s, gg;
  ASSERT_CH_OK(ch_functions_sum(s.out(), g_double));
  EXPECT_CH_ERR(CH_ERR_GRAPH, ch_variable_backward(s, 0));
  EXPECT_TRUE(contains(ch_error_message(), "LocalResponseNormalizationGrad")) << ch_error_message();
  ch_variable* souts[] = {s};
  EXPECT_CH_ERR(CH_ERR_GRAPH, ch_grad(gg.out(), souts, 1, ins, 1, nullptr, &opt));
  EXPECT_TRUE(contains(ch_error_message(), "LocalResponseNormalizationGrad")) << ch_error_message();
}

TEST_F(DoubleBackpropFunctions, HierarchicalSoftmaxHasNoDoubleBackward) {
  const int32_t tree[] = {-1, 1, -2, -3};  // words 0 | (1 | 2)
  Fn hsm;
  ASSERT_CH_OK(
      ch_functions_binary_hierarchical_softmax_new(hsm.out(), 3, tree, 2, CH_FLOAT64, nullptr));
  Var x = var_f64({2, 3}, {0.1, -0.4, 0.3, 0.7, 0.2, -0.5}), t, loss;
  Arr ta;
  const int64_t n[] = {2};
  const int32_t labels[] = {2, 0};
  ASSERT_CH_OK(ch_array_new(ta.out(), CH_INT32, n, 1, labels, cpu()));
  t = make_var(ta);
  ch_variable* in[] = {x, t};
  ASSERT_CH_OK(ch_function_apply(hsm, in, 2, loss.out(), 1, nullptr));
  ch_backward_options opt = CH_BACKWARD_OPTIONS_INIT;
  opt.enable_double_backprop = 1;
  EXPECT_CH_ERR(CH_ERR_GRAPH, ch_variable_backward_ex(loss, &opt));
  EXPECT_TRUE(contains(ch_error_message(), "BinaryHierarchicalSoftmax")) << ch_error_message();
  ASSERT_CH_OK(ch_variable_backward(loss, 0));  // the plain backward still works
  EXPECT_TRUE(has_grad(x));
}

}  // namespace
