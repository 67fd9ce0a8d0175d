// Helpers shared by the tests of the convolution, pooling and normalization
// functions: applying a function object to one variable, reading its
// parameters, and a finite-difference check of parameter gradients.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "op_test_util.h"

namespace convtest {

using namespace optest;

// y = f(x) through ch_function_apply.
inline ch_status apply_fn(ch_function* f, ch_variable* x, ch_variable** out) {
  size_t n = 0;
  return ch_function_apply(f, &x, 1, out, 1, &n);
}
inline Var apply_ok(const Func& f, const Var& x) {
  Var y;
  OPTEST_OK(apply_fn(f.get(), x.get(), y.out()));
  return y;
}

struct Param {
  Array value, grad;
  std::string name;
};
inline Param param(const Func& f, size_t i) {
  Param p;
  const char* name = nullptr;
  OPTEST_OK(ch_function_parameter(p.value.out(), p.grad.out(), &name, f.get(), i));
  p.name = name ? name : "";
  return p;
}
inline void zero_grads(const Func& f) {
  for (size_t i = 0, n = ch_function_parameter_count(f.get()); i < n; ++i)
    OPTEST_OK(ch_array_fill(param(f, i).grad.get(), 0.0));
}

// Forward and backward tolerances against float64 NumPy references for
// functions that sum a few dozen products: float64 to rounding; float32 a
// few float32 ulp of the magnitudes involved.
inline Tol fwd_tol(ch_dtype dt) { return dt == CH_FLOAT64 ? Tol{1e-12, 1e-12} : Tol{2e-5, 2e-5}; }
inline Tol bwd_tol(ch_dtype dt) { return dt == CH_FLOAT64 ? Tol{1e-12, 1e-12} : Tol{5e-5, 5e-5}; }

// L(p) = sum(f(x) * gy); compares dL/dp of parameter `index` from backward
// with central differences (step eps) element by element.
// `apply` (default: ch_function_apply) builds y from x.
using ApplyFn = std::function<Var(const Func&, const Var&)>;
inline ::testing::AssertionResult param_grad_matches(const Func& f, const Array& x, const Array& gy,
                                                     size_t index, double eps, Tol tol,
                                                     const ApplyFn& apply = apply_ok) {
  Var vx = make_var(x);
  zero_grads(f);
  Var y = apply(f, vx);
  backward(y, gy);
  Param p = param(f, index);
  const std::vector<double> analytic = values_of(p.grad.get());
  const std::vector<double> g = values_of(gy.get());
  const int64_t n = ch_array_size(p.value.get());
  const bool f32 = ch_array_dtype(p.value.get()) == CH_FLOAT32;
  auto loss = [&]() {
    Var yy = apply(f, vx);
    std::vector<double> v = values_of(yy);
    double s = 0;
    for (size_t i = 0; i < v.size(); ++i) s += v[i] * g[i];
    return s;
  };
  auto shift = [&](int64_t i, double d) {
    if (f32)
      static_cast<float*>(ch_array_data(p.value.get()))[i] += static_cast<float>(d);
    else
      static_cast<double*>(ch_array_data(p.value.get()))[i] += d;
  };
  std::vector<double> numeric(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    double orig;
    OPTEST_OK(ch_array_get(&orig, p.value.get(), i));
    shift(i, eps);
    const double up = loss();
    shift(i, -2 * eps);
    const double down = loss();
    if (f32)
      static_cast<float*>(ch_array_data(p.value.get()))[i] = static_cast<float>(orig);
    else
      static_cast<double*>(ch_array_data(p.value.get()))[i] = orig;
    numeric[static_cast<size_t>(i)] = (up - down) / (2 * eps);
  }
  return all_close(p.grad.get(), ch_array_dtype(p.grad.get()), shape_of(p.value.get()),
                   numeric.data(), n, tol)
         << " (parameter " << p.name << ")";
}

}  // namespace convtest
