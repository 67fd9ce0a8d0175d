// chainerc's C++ API: numerical gradients, allclose,
// check_backward, check_double_backward (over <ch/gradient_check.h>).
// Part of <ch/ch.hpp>, which says what the C++ layer adds, how exceptions and
// callbacks behave and the threading contract; header-only.
#ifndef CH_GRADIENT_CHECK_HPP
#define CH_GRADIENT_CHECK_HPP

#include <ch/function.hpp>

namespace ch {
// ===========================================================================================
// Gradient checking
// ===========================================================================================

/// Numerical gradients by central differences (the seed's gradient_check.numerical_grad):
/// each element of each input is moved by +eps and -eps in place (and restored), `f` is
/// evaluated, and grad = sum(grad_outputs * (f+ - f-)) / 2eps. `f` must compute from the
/// same `inputs` arrays (capture them). One gradient per input, in the input's dtype.
inline std::vector<Array> numerical_grad(const std::function<std::vector<Array>()>& f,
                                         const std::vector<Array>& inputs,
                                         const std::vector<Array>& grad_outputs,
                                         double eps = 1e-3) {
  struct Eval {
    static ch_status call(void* user_data, ch_context* ctx) {
      return detail::guard([&] {
        const auto& fn = *static_cast<const std::function<std::vector<Array>()>*>(user_data);
        for (const Array& y : fn()) check(ch_context_add_output(ctx, y.get()));
      });
    }
  };
  std::vector<ch_array*> xs = detail::handles_of(inputs);
  std::vector<ch_array*> gys = detail::handles_of(grad_outputs);
  std::vector<ch_array*> out(inputs.size(), nullptr);
  check(ch_numerical_grad(out.data(), &Eval::call,
                          const_cast<std::function<std::vector<Array>()>*>(&f), xs.data(),
                          xs.size(), gys.data(), gys.size(), eps));
  std::vector<Array> grads;
  grads.reserve(out.size());
  for (ch_array* g : out) grads.push_back(Array::adopt(g));
  return grads;
}

/// Whether |a - b| <= atol + rtol * |b| everywhere (numpy.allclose). Shapes must be equal
/// (ch::Error otherwise).
inline bool allclose(const Array& a, const Array& b, double atol = 1e-5, double rtol = 1e-4) {
  ch_status st = ch_allclose(a.get(), b.get(), atol, rtol, nullptr);
  if (st == CH_ERR_NOT_CLOSE) return false;
  check(st);
  return true;
}

/// As allclose, but throws ch::Error (CH_ERR_NOT_CLOSE) naming the worst element.
inline void assert_allclose(const Array& a, const Array& b, double atol = 1e-5,
                            double rtol = 1e-4) {
  check(ch_allclose(a.get(), b.get(), atol, rtol, nullptr));
}

/// Check a function's backward against numerical gradients (the seed's check_backward):
/// apply `function` to copies of `inputs`, back-propagate `grad_outputs` (one per output;
/// an empty list or empty Arrays mean ones) and compare every float input's gradient with
/// numerical_grad under (atol, rtol). Throws ch::Error (CH_ERR_NOT_CLOSE) on a mismatch.
inline void check_backward(const Function& function, const std::vector<Array>& inputs,
                           const std::vector<Array>& grad_outputs = {}, double eps = 1e-3,
                           double atol = 1e-5, double rtol = 1e-4) {
  std::vector<ch_array*> xs = detail::handles_of(inputs);
  std::vector<ch_array*> gys = detail::handles_of(grad_outputs);
  check(ch_check_backward(function.get(), xs.data(), xs.size(),
                          grad_outputs.empty() ? nullptr : gys.data(), gys.size(), eps, atol,
                          rtol));
}

/// check_backward for a C++ function object.
inline void check_backward(const FunctionBase& function, const std::vector<Array>& inputs,
                           const std::vector<Array>& grad_outputs = {}, double eps = 1e-3,
                           double atol = 1e-5, double rtol = 1e-4) {
  check_backward(function.function(), inputs, grad_outputs, eps, atol, rtol);
}

/// A graph to check: outputs built from input variables with any functions.
using GraphBuilder = std::function<std::vector<Variable>(const std::vector<Variable>&)>;

/// check_backward for a whole graph built by `build` (called several times, on root and on
/// volatile variables). An empty grad_outputs means ones for every output.
inline void check_backward(const GraphBuilder& build, const std::vector<Array>& inputs,
                           std::vector<Array> grad_outputs = {}, double eps = 1e-3,
                           double atol = 1e-5, double rtol = 1e-4) {
  struct Build {
    static ch_status call(void* user_data, ch_variable* const* in, size_t n_in, ch_variable** out,
                          size_t n_out) {
      return detail::guard([&] {
        const GraphBuilder& fn = *static_cast<const GraphBuilder*>(user_data);
        std::vector<Variable> xs;
        xs.reserve(n_in);
        for (size_t i = 0; i < n_in; ++i) xs.push_back(Variable::borrow(in[i]));
        std::vector<Variable> ys = fn(xs);
        if (ys.size() != n_out)
          detail::fail(CH_ERR_CALLBACK, "check_backward: the graph returned " +
                                            std::to_string(ys.size()) + " outputs but " +
                                            std::to_string(n_out) + " grad_outputs were given");
        for (size_t j = 0; j < n_out; ++j)
          if (!ys[j])
            detail::fail(CH_ERR_CALLBACK,
                         "check_backward: the graph returned an "
                         "empty variable as output " +
                             std::to_string(j));
        for (size_t j = 0; j < n_out; ++j) out[j] = ys[j].release();  // new references
      });
    }
  };
  if (grad_outputs.empty()) {  // learn the number of outputs from a volatile evaluation
    std::vector<Variable> probe;
    for (const Array& x : inputs) probe.emplace_back(x.copy(), true);
    grad_outputs.resize(build(probe).size());
  }
  std::vector<ch_array*> xs = detail::handles_of(inputs);
  std::vector<ch_array*> gys = detail::handles_of(grad_outputs);
  check(ch_check_backward_graph(&Build::call, const_cast<GraphBuilder*>(&build), xs.data(),
                                xs.size(), gys.data(), gys.size(), eps, atol, rtol));
}

}  // namespace ch

#endif  // CH_GRADIENT_CHECK_HPP
