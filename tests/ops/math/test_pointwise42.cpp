// Issue 42's elementwise functions where the manifest's NumPy cases
// (test_pointwise_table.cpp) do not reach: Chainer 7's values and gradients at
// the boundaries and kinks (clip, elu, clipped_relu, absolute), softplus far
// from 0, maximum / minimum (ties, broadcasting) and where (broadcasting, an
// int32 or float condition), all from pointwise42_references.inc
// (make_pointwise42_references.py, Chainer 7.8.1); their backward against
// central differences and their double backward; the argument errors; gelu's
// and silu's values against PyTorch 2 (pointwise42_torch.inc).
#include <cmath>
#include <limits>

#include "op_test_util.h"

namespace {

using namespace optest;

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// ---- one input, Chainer 7 at the boundaries ----------------------------------

struct Ref1 {
  const char* name;
  double opt0, opt1;
  std::vector<double> x, y, gx;
};

// The generated lists are in parentheses (macro arguments): CH_L makes them braces.
#define CH_L(...) \
  { __VA_ARGS__ }
#define CH_REF1(name, o0, o1, x, y, gx) {#name, o0, o1, CH_L x, CH_L y, CH_L gx},
#define CH_REF2(...)
#define CH_REF3(...)
const Ref1 kRef1[] = {
#include "pointwise42_references.inc"
};
#undef CH_REF1
#undef CH_REF2
#undef CH_REF3

ch_status call1(const Ref1& r, ch_variable** out, ch_variable* x) {
  const std::string n = r.name;
  if (n == "clip") return ch_functions_clip(out, x, r.opt0, r.opt1);
  if (n == "elu") return ch_functions_elu(out, x, r.opt0);
  if (n == "clipped_relu") return ch_functions_clipped_relu(out, x, r.opt0);
  if (n == "softplus") return ch_functions_softplus(out, x, r.opt0);
  if (n == "absolute") return ch_functions_absolute(out, x);
  ch_error_set(CH_ERR_INVALID_ARGUMENT, "no such case");
  return CH_ERR_INVALID_ARGUMENT;
}

using Pointwise42 = OpTest;

TEST_F(Pointwise42, BoundariesMatchChainer7) {
  for (const Ref1& r : kRef1)
    for (ch_dtype dt : {CH_FLOAT64, CH_FLOAT32}) {
      const Shape s = {static_cast<int64_t>(r.x.size())};
      const Tol tol = dt == CH_FLOAT64 ? Tol{1e-12, 1e-12} : Tol{1e-6, 1e-6};
      Var x = make_var(dt, s, r.x);
      Var y;
      OPTEST_OK(call1(r, y.out(), x.get()));
      EXPECT_TRUE(all_close(data_of(y), dt, s, r.y, tol))
          << r.name << "(" << r.opt0 << ") " << ch_dtype_name(dt);
      backward(y, ones_like(y));
      EXPECT_TRUE(all_close(grad_of(x), dt, s, r.gx, tol))
          << r.name << "(" << r.opt0 << ")'s gradient, " << ch_dtype_name(dt);
    }
}

// The graph backward (double backprop) gives the same first gradient at the
// kinks as the array backward: Chainer's conventions hold with
// enable_double_backprop too.
TEST_F(Pointwise42, GraphBackwardKeepsTheConventions) {
  for (const Ref1& r : kRef1) {
    const Shape s = {static_cast<int64_t>(r.x.size())};
    Var x = make_var(CH_FLOAT64, s, r.x);
    Var y;
    OPTEST_OK(call1(r, y.out(), x.get()));
    Var sum;
    OPTEST_OK(ch_functions_sum(sum.out(), y.get()));
    ch_variable* outs[] = {sum.get()};
    ch_variable* xs[] = {x.get()};
    Var g;
    ch_backward_options o = CH_BACKWARD_OPTIONS_INIT;
    o.enable_double_backprop = 1;
    OPTEST_OK(ch_grad(g.out(), outs, 1, xs, 1, nullptr, &o));
    EXPECT_TRUE(all_close(data_of(g), CH_FLOAT64, s, r.gx, Tol{1e-12, 1e-12})) << r.name;
  }
}

// ---- maximum, minimum ----------------------------------------------------------

struct Ref2 {
  const char* name;
  Shape sa;
  std::vector<double> a;
  Shape sb;
  std::vector<double> b, y, gy, ga, gb;
};

#define CH_REF1(...)
#define CH_REF2(name, sa, a, sb, b, y, gy, ga, gb) \
  {#name, CH_L sa, CH_L a, CH_L sb, CH_L b, CH_L y, CH_L gy, CH_L ga, CH_L gb},
#define CH_REF3(...)
const Ref2 kRef2[] = {
#include "pointwise42_references.inc"
};
#undef CH_REF1
#undef CH_REF2
#undef CH_REF3

using Fn2 = ch_status (*)(ch_variable**, ch_variable*, ch_variable*);
Fn2 fn2(const std::string& n) {
  return n == "maximum" ? ch_functions_maximum : ch_functions_minimum;
}

Shape broadcast(const Shape& a, const Shape& b) {
  Shape s(std::max(a.size(), b.size()), 1);
  for (size_t i = 0; i < s.size(); ++i) {
    const int64_t da = i < s.size() - a.size() ? 1 : a[i - (s.size() - a.size())];
    const int64_t db = i < s.size() - b.size() ? 1 : b[i - (s.size() - b.size())];
    s[i] = da == 1 ? db : da;
  }
  return s;
}

TEST_F(Pointwise42, MaximumMinimumMatchChainer7TiesToA) {
  for (const Ref2& r : kRef2)
    for (ch_dtype dt : {CH_FLOAT64, CH_FLOAT32}) {
      const Tol tol = dt == CH_FLOAT64 ? Tol{1e-12, 1e-12} : Tol{1e-6, 1e-6};
      const Shape sy = broadcast(r.sa, r.sb);
      Var a = make_var(dt, r.sa, r.a), b = make_var(dt, r.sb, r.b);
      Var y;
      OPTEST_OK(fn2(r.name)(y.out(), a.get(), b.get()));
      EXPECT_TRUE(all_close(data_of(y), dt, sy, r.y, tol)) << r.name << " " << ch_dtype_name(dt);
      backward(y, make_array(dt, sy, r.gy));
      EXPECT_TRUE(all_close(grad_of(a), dt, r.sa, r.ga, tol)) << r.name << "'s ga";
      EXPECT_TRUE(all_close(grad_of(b), dt, r.sb, r.gb, tol)) << r.name << "'s gb";
    }
}

ch_status double_backward(const Build& build, const std::vector<const Array*>& xs, const Array& gy,
                          const std::vector<const Array*>& ggxs) {
  std::vector<ch_array*> x, gg;
  for (const Array* a : xs) x.push_back(a->get());
  for (const Array* a : ggxs) gg.push_back(a->get());
  ch_array* gys[] = {gy.get()};
  return ch_check_double_backward(build_trampoline, const_cast<Build*>(&build), x.data(), x.size(),
                                  gys, 1, gg.data(), gg.size(), 1e-4, 1e-6, 1e-5);
}

// Away from ties (finite differences need a margin), broadcast.
TEST_F(Pointwise42, MaximumMinimumBackwardAndDoubleBackward) {
  for (const char* name : {"maximum", "minimum"}) {
    Build build = [name](ch_variable* const* in, size_t, ch_variable** out) {
      return fn2(name)(out, in[0], in[1]);
    };
    for (ch_dtype dt : {CH_FLOAT64, CH_FLOAT32}) {
      Array a = make_array(dt, {2, 3}, {1.0, -0.7, 0.3, 2.0, -1.5, 0.9});
      Array b = make_array(dt, {3}, {0.5, -0.2, 1.1});
      Array gy = make_array(dt, {2, 3}, {0.5, -1.0, 2.0, 1.5, -0.25, 1.0});
      EXPECT_EQ(check_backward(build, {&a, &b}, &gy, check_tol(dt)), CH_OK)
          << name << " " << ch_dtype_name(dt) << ": " << ch_error_message();
    }
    Array a = make_array(CH_FLOAT64, {2, 3}, {1.0, -0.7, 0.3, 2.0, -1.5, 0.9});
    Array b = make_array(CH_FLOAT64, {3}, {0.5, -0.2, 1.1});
    Array gy = make_array(CH_FLOAT64, {2, 3}, {0.5, -1.0, 2.0, 1.5, -0.25, 1.0});
    Array gga = make_array(CH_FLOAT64, {2, 3}, {1.0, 0.75, -0.5, 2.0, 1.25, -1.5});
    Array ggb = make_array(CH_FLOAT64, {3}, {-0.5, 0.25, 1.0});
    EXPECT_EQ(double_backward(build, {&a, &b}, gy, {&gga, &ggb}), CH_OK)
        << name << ": " << ch_error_message();
  }
}

// NumPy's maximum / minimum: a NaN operand gives NaN, either side.
TEST_F(Pointwise42, MaximumMinimumPropagateNaN) {
  for (const char* name : {"maximum", "minimum"}) {
    Var a = make_var(CH_FLOAT64, {3}, {kNaN, 1.0, 2.0});
    Var b = make_var(CH_FLOAT64, {3}, {1.0, kNaN, kInf});
    Var y;
    OPTEST_OK(fn2(name)(y.out(), a.get(), b.get()));
    std::vector<double> v = values_of(y);
    EXPECT_TRUE(std::isnan(v[0])) << name;
    EXPECT_TRUE(std::isnan(v[1])) << name;
    EXPECT_EQ(v[2], std::string(name) == "maximum" ? kInf : 2.0) << name;
  }
}

// ---- where ---------------------------------------------------------------------

struct Ref3 {
  const char* name;
  Shape sc;
  std::vector<double> c;
  Shape sx;
  std::vector<double> x;
  Shape sy;
  std::vector<double> y, z, gz, gx, gy;
};

#define CH_REF1(...)
#define CH_REF2(...)
#define CH_REF3(name, sc, c, sx, x, sy, y, z, gz, gx, gy) \
  {#name, CH_L sc, CH_L c, CH_L sx, CH_L x, CH_L sy, CH_L y, CH_L z, CH_L gz, CH_L gx, CH_L gy},
const Ref3 kRef3[] = {
#include "pointwise42_references.inc"
};
#undef CH_REF1
#undef CH_REF2
#undef CH_REF3

TEST_F(Pointwise42, WhereMatchesChainer7) {
  for (const Ref3& r : kRef3)
    for (ch_dtype dt : {CH_FLOAT64, CH_FLOAT32})
      for (ch_dtype ct : {CH_INT32, CH_FLOAT32, CH_FLOAT64}) {
        const Tol tol = dt == CH_FLOAT64 ? Tol{1e-12, 1e-12} : Tol{1e-6, 1e-6};
        const Shape sz = broadcast(broadcast(r.sc, r.sx), r.sy);
        std::vector<double> c = r.c;  // nonzero is true: not only 1
        for (double& v : c) v *= 3;
        Array cond = make_array(ct, r.sc, c);
        Var x = make_var(dt, r.sx, r.x), y = make_var(dt, r.sy, r.y);
        Var z;
        OPTEST_OK(ch_functions_where(z.out(), cond.get(), x.get(), y.get()));
        EXPECT_TRUE(all_close(data_of(z), dt, sz, r.z, tol))
            << r.name << " " << ch_dtype_name(dt) << " condition " << ch_dtype_name(ct);
        backward(z, make_array(dt, sz, r.gz));
        EXPECT_TRUE(all_close(grad_of(x), dt, r.sx, r.gx, tol)) << r.name << "'s gx";
        EXPECT_TRUE(all_close(grad_of(y), dt, r.sy, r.gy, tol)) << r.name << "'s gy";
      }
}

// The value not chosen does not leak (no product): inf and NaN there give the
// other side exactly, and their gradient 0.
TEST_F(Pointwise42, WhereIsExact) {
  Array cond = make_array(CH_INT32, {3}, {1, 0, 1});
  Var x = make_var(CH_FLOAT64, {3}, {1.0, kNaN, -0.0});
  Var y = make_var(CH_FLOAT64, {3}, {kInf, 2.0, kNaN});
  Var z;
  OPTEST_OK(ch_functions_where(z.out(), cond.get(), x.get(), y.get()));
  std::vector<double> v = values_of(z);
  EXPECT_EQ(v[0], 1.0);
  EXPECT_EQ(v[1], 2.0);
  EXPECT_EQ(v[2], 0.0);
  backward(z, make_array(CH_FLOAT64, {3}, {kInf, 1.0, 1.0}));
  EXPECT_TRUE(all_equal(grad_of(x), CH_FLOAT64, {3}, {kInf, 0.0, 1.0}));
  EXPECT_TRUE(all_equal(grad_of(y), CH_FLOAT64, {3}, {0.0, 1.0, 0.0}));
}

TEST_F(Pointwise42, WhereBackwardAndDoubleBackward) {
  Array cond = make_array(CH_INT32, {2, 3}, {1, 0, 1, 0, 0, 1});
  Build build = [&cond](ch_variable* const* in, size_t, ch_variable** out) {
    return ch_functions_where(out, cond.get(), in[0], in[1]);
  };
  for (ch_dtype dt : {CH_FLOAT64, CH_FLOAT32}) {
    Array x = make_array(dt, {2, 3}, {1.0, -0.7, 0.3, 2.0, -1.5, 0.9});
    Array y = make_array(dt, {2, 1}, {0.5, -0.2});
    Array gz = make_array(dt, {2, 3}, {0.5, -1.0, 2.0, 1.5, -0.25, 1.0});
    EXPECT_EQ(check_backward(build, {&x, &y}, &gz, check_tol(dt)), CH_OK)
        << ch_dtype_name(dt) << ": " << ch_error_message();
  }
  Array x = make_array(CH_FLOAT64, {2, 3}, {1.0, -0.7, 0.3, 2.0, -1.5, 0.9});
  Array y = make_array(CH_FLOAT64, {2, 1}, {0.5, -0.2});
  Array gz = make_array(CH_FLOAT64, {2, 3}, {0.5, -1.0, 2.0, 1.5, -0.25, 1.0});
  Array ggx = make_array(CH_FLOAT64, {2, 3}, {1.0, 0.75, -0.5, 2.0, 1.25, -1.5});
  Array ggy = make_array(CH_FLOAT64, {2, 1}, {-0.5, 0.25});
  EXPECT_EQ(double_backward(build, {&x, &y}, gz, {&ggx, &ggy}), CH_OK) << ch_error_message();
}

// ---- argument errors -------------------------------------------------------------

TEST_F(Pointwise42, BadOptionsAreRefusedWithTheValues) {
  Var x = make_var(CH_FLOAT64, {2}, {0.5, 1.0});
  Var y;
  EXPECT_TRUE(fails_with(ch_functions_clip(y.out(), x.get(), 2.0, 1.0), CH_ERR_INVALID_ARGUMENT,
                         {"clip", "x_min = 2", "x_max = 1"}));
  EXPECT_TRUE(fails_with(ch_functions_clip(y.out(), x.get(), 1.0, 1.0), CH_ERR_INVALID_ARGUMENT,
                         {"clip", "x_min = 1", "x_max = 1"}));
  EXPECT_TRUE(fails_with(ch_functions_clip(y.out(), x.get(), kNaN, 1.0), CH_ERR_INVALID_ARGUMENT,
                         {"clip", "nan"}));
  EXPECT_TRUE(fails_with(ch_functions_softplus(y.out(), x.get(), 0.0), CH_ERR_INVALID_ARGUMENT,
                         {"softplus", "beta = 0"}));
  EXPECT_TRUE(fails_with(ch_functions_softplus(y.out(), x.get(), kInf), CH_ERR_INVALID_ARGUMENT,
                         {"softplus", "beta = inf"}));
  EXPECT_TRUE(fails_with(ch_functions_elu(y.out(), x.get(), kNaN), CH_ERR_INVALID_ARGUMENT,
                         {"elu", "alpha = nan"}));
  EXPECT_TRUE(fails_with(ch_functions_clipped_relu(y.out(), x.get(), 0.0), CH_ERR_INVALID_ARGUMENT,
                         {"clipped_relu", "z = 0"}));
  EXPECT_TRUE(fails_with(ch_functions_clipped_relu(y.out(), x.get(), -6.0), CH_ERR_INVALID_ARGUMENT,
                         {"clipped_relu", "z = -6"}));
  EXPECT_FALSE(y);
}

// A bound of +-infinity is Chainer's None: no bound on that side.
TEST_F(Pointwise42, ClipWithOneBound) {
  Var x = make_var(CH_FLOAT64, {4}, {-5.0, 0.0, 2.0, 9.0});
  Var y;
  OPTEST_OK(ch_functions_clip(y.out(), x.get(), -kInf, 2.0));
  EXPECT_TRUE(all_equal(data_of(y), CH_FLOAT64, {4}, {-5.0, 0.0, 2.0, 2.0}));
  backward(y, ones_like(y));
  EXPECT_TRUE(all_equal(grad_of(x), CH_FLOAT64, {4}, {1.0, 1.0, 1.0, 0.0}));
}

TEST_F(Pointwise42, BadOperandsAreRefused) {
  Var a = make_var(CH_FLOAT64, {2, 3}, {1, 2, 3, 4, 5, 6});
  Var b = make_var(CH_FLOAT64, {4}, {1, 2, 3, 4});
  Var f = make_var(CH_FLOAT32, {2, 3}, {1, 2, 3, 4, 5, 6});
  Var i = make_var(iota(CH_INT32, {2, 3}));
  Var y;
  for (const char* name : {"maximum", "minimum"}) {
    EXPECT_TRUE(
        fails_with(fn2(name)(y.out(), a.get(), b.get()), CH_ERR_SHAPE, {name, "(2, 3)", "(4,)"}));
    EXPECT_TRUE(fails_with(fn2(name)(y.out(), a.get(), f.get()), CH_ERR_DTYPE,
                           {name, "float64", "float32"}));
    EXPECT_TRUE(fails_with(fn2(name)(y.out(), i.get(), i.get()), CH_ERR_DTYPE, {name, "int32"}));
  }
  Array c = make_array(CH_INT32, {4}, {1, 0, 1, 0});
  EXPECT_TRUE(fails_with(ch_functions_where(y.out(), c.get(), a.get(), a.get()), CH_ERR_SHAPE,
                         {"where", "(4,)", "(2, 3)"}));
  Array c2 = make_array(CH_INT32, {2, 3}, {1, 0, 1, 0, 1, 0});
  EXPECT_TRUE(fails_with(ch_functions_where(y.out(), c2.get(), a.get(), f.get()), CH_ERR_DTYPE,
                         {"where", "float64", "float32"}));
  EXPECT_TRUE(fails_with(ch_functions_where(y.out(), nullptr, a.get(), a.get()), CH_ERR_NULL_HANDLE,
                         {"ch_functions_where", "condition"}));
  for (auto fn : {ch_functions_sqrt, ch_functions_rsqrt, ch_functions_absolute, ch_functions_erf,
                  ch_functions_gelu, ch_functions_gelu_tanh, ch_functions_silu})
    EXPECT_TRUE(fails_with(fn(y.out(), i.get()), CH_ERR_DTYPE, {"int32"}));
  EXPECT_FALSE(y);
}

// ---- swish (Chainer's, beta along axis 1) --------------------------------------------

// Chainer 7.8.1's F.swish(x, beta) at these inputs: y, x.grad and beta.grad for gy.
TEST_F(Pointwise42, SwishMatchesChainer7) {
  for (ch_dtype dt : {CH_FLOAT64, CH_FLOAT32}) {
    const Tol tol = dt == CH_FLOAT64 ? Tol{1e-12, 1e-12} : Tol{1e-6, 1e-6};
    Var x = make_var(dt, {2, 3}, {-2.0, 0.5, 1.5, 1.0, -0.5, 3.0});
    Var beta = make_var(dt, {3}, {0.5, 1.0, 2.0});
    Var y;
    OPTEST_OK(ch_functions_swish(y.out(), x.get(), beta.get()));
    EXPECT_TRUE(all_close(data_of(y), dt, {2, 3},
                          {-0.5378828427399902, 0.3112296656009273, 1.4288611902336499,
                           0.6224593312018546, -0.1887703343990727, 2.9925821305300957},
                          tol));
    backward(y, make_array(dt, {2, 3}, {1.0, -1.0, 0.5, 2.0, 0.25, -0.5}));
    EXPECT_TRUE(all_close(grad_of(x), dt, {2, 3},
                          {0.07232948812851331, -0.7399611873026519, 0.5440520530075847,
                           1.4799223746053038, 0.06500970317433705, -0.5061632162957626},
                          tol));
    EXPECT_TRUE(all_close(grad_of(beta), dt, {3},
                          {1.2564551573691163, -0.04406319603779897, 0.039724450386155935}, tol));
  }
}

TEST_F(Pointwise42, SwishBackwardDoubleBackwardAndShapes) {
  Build build = [](ch_variable* const* in, size_t, ch_variable** out) {
    return ch_functions_swish(out, in[0], in[1]);
  };
  Array x =
      make_array(CH_FLOAT64, {2, 3, 2}, {-2, -1.5, -1, -0.5, 0.25, 0.5, 1, 1.5, 2, -0.7, 0.9, 1.2});
  Array beta = make_array(CH_FLOAT64, {3}, {0.5, 1.0, 2.0});
  Array gy =
      make_array(CH_FLOAT64, {2, 3, 2}, {0.5, -1, 2, 1.5, -0.25, 1, 1, 0.75, -0.5, 2, 1.25, -1.5});
  EXPECT_EQ(check_backward(build, {&x, &beta}, &gy, check_tol(CH_FLOAT64)), CH_OK)
      << ch_error_message();
  Array ggx =
      make_array(CH_FLOAT64, {2, 3, 2}, {1, 0.75, -0.5, 2, 1.25, -1.5, 0.5, -1, 2, 1.5, -0.25, 1});
  Array ggb = make_array(CH_FLOAT64, {3}, {-0.5, 0.25, 1.0});
  EXPECT_EQ(double_backward(build, {&x, &beta}, gy, {&ggx, &ggb}), CH_OK) << ch_error_message();
  Var xv = make_var(x), b2 = make_var(CH_FLOAT64, {2}, {1, 1}),
      b3 = make_var(CH_FLOAT64, {3, 2, 2}, std::vector<double>(12, 1.0));
  Var y;
  EXPECT_TRUE(fails_with(ch_functions_swish(y.out(), xv.get(), b2.get()), CH_ERR_SHAPE,
                         {"swish", "(2,)", "(2, 3, 2)"}));
  EXPECT_TRUE(fails_with(ch_functions_swish(y.out(), xv.get(), b3.get()), CH_ERR_SHAPE,
                         {"swish", "(3, 2, 2)"}));
  EXPECT_FALSE(y);
}

// ---- gelu, silu against PyTorch ----------------------------------------------------

struct TorchRef {
  const char* name;
  std::vector<double> x, y, gx;
};
#define CH_TORCH(name, x, y, gx) {#name, CH_L x, CH_L y, CH_L gx},
const TorchRef kTorch[] = {
#include "pointwise42_torch.inc"
};
#undef CH_TORCH

TEST_F(Pointwise42, GeluSiluMatchPyTorch) {
  for (const TorchRef& r : kTorch)
    for (ch_dtype dt : {CH_FLOAT64, CH_FLOAT32}) {
      const std::string n = r.name;
      auto fn = n == "gelu"        ? ch_functions_gelu
                : n == "gelu_tanh" ? ch_functions_gelu_tanh
                                   : ch_functions_silu;
      const Shape s = {static_cast<int64_t>(r.x.size())};
      const Tol tol = dt == CH_FLOAT64 ? Tol{1e-12, 1e-12} : Tol{2e-6, 2e-6};
      Var x = make_var(dt, s, r.x);
      Var y;
      OPTEST_OK(fn(y.out(), x.get()));
      EXPECT_TRUE(all_close(data_of(y), dt, s, r.y, tol)) << n << " " << ch_dtype_name(dt);
      backward(y, ones_like(y));
      EXPECT_TRUE(all_close(grad_of(x), dt, s, r.gx, tol)) << n << "' " << ch_dtype_name(dt);
    }
}

}  // namespace
