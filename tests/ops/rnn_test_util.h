// Helpers for the tests of parameterized function objects (EmbedID,
// BinaryHierarchicalSoftmax): parameter access and a gradient check of a
// parameter against ch_numerical_grad. Only the C API is used.
#pragma once

#include "op_test_util.h"

namespace rnntest {

using namespace optest;

// Parameter `index` of function object f and its gradient (shared, not copied).
struct Param {
  Array param, grad;
  std::string name;
};
inline Param param_of(const Func& f, size_t index) {
  Param p;
  const char* name = nullptr;
  OPTEST_OK(ch_function_parameter(p.param.out(), p.grad.out(), &name, f.get(), index));
  p.name = name ? name : "";
  return p;
}

// Applies f to volatile variables of `inputs` and reports its single output.
struct EvalState {
  ch_function* f;
  std::vector<ch_array*> inputs;
};
inline ch_status eval_apply(void* user_data, ch_context* ctx) {
  auto* s = static_cast<EvalState*>(user_data);
  std::vector<Var> vs;
  std::vector<ch_variable*> hs;
  for (ch_array* a : s->inputs) {
    Var v;
    ch_status st = ch_variable_new(v.out(), a, 1);
    if (st != CH_OK) return st;
    hs.push_back(v.get());
    vs.push_back(std::move(v));
  }
  Var y;
  size_t n = 0;
  ch_status st = ch_function_apply(s->f, hs.data(), hs.size(), y.out(), 1, &n);
  if (st != CH_OK) return st;
  Array d;
  st = ch_variable_data(d.out(), y.get());
  if (st != CH_OK) return st;
  return ch_context_add_output(ctx, d.get());
}

// Runs forward and backward (upstream gradient gy) of f at `inputs` with the
// parameter gradients zeroed first, then compares the gradient of parameter
// `index` with the numerical gradient of sum(gy * f(inputs)) with respect to
// that parameter (moved in place by ch_numerical_grad).
inline ::testing::AssertionResult param_grad_matches_numerical(
    const Func& f, const std::vector<const Array*>& inputs, const Array& gy, size_t index,
    CheckTol t) {
  const size_t np = ch_function_parameter_count(f.get());
  for (size_t i = 0; i < np; ++i) OPTEST_OK(ch_array_fill(param_of(f, i).grad.get(), 0.0));
  std::vector<Var> vs;
  std::vector<ch_variable*> hs;
  for (const Array* a : inputs) {
    vs.push_back(make_var(*a));
    hs.push_back(vs.back().get());
  }
  Var y;
  OPTEST_OK(ch_function_apply(f.get(), hs.data(), hs.size(), y.out(), 1, nullptr));
  backward(y, gy);
  Param p = param_of(f, index);
  EvalState s{f.get(), {}};
  for (const Array* a : inputs) s.inputs.push_back(a->get());
  ch_array* gys[1] = {gy.get()};
  ch_array* xs[1] = {p.param.get()};
  Array num;
  OPTEST_OK(ch_numerical_grad(num.out(), eval_apply, &s, xs, 1, gys, 1, t.eps));
  ch_allclose_report r;
  if (ch_allclose(p.grad.get(), num.get(), t.atol, t.rtol, &r) != CH_OK)
    return ::testing::AssertionFailure() << "parameter " << p.name << ": " << ch_error_message();
  return ::testing::AssertionSuccess();
}

}  // namespace rnntest
