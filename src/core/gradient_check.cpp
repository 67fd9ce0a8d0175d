#include "gradient_check.h"

#include <cmath>
#include <cstdio>
#include <sstream>

#include "device_backend.h"
#include "error.h"

namespace chainerc {

namespace {
void require_float(const Array& a, const char* who, size_t i) {
  if (!a.defined()) fail(CH_ERR_INVALID_ARGUMENT, who, ": input ", i, " is missing");
  if (!is_floating(a.dtype()))
    fail(CH_ERR_DTYPE, who, ": input ", i, " is a ", a.describe(), "; float32 or float64 expected");
}

double get_as_double(const Array& a, int64_t i) { return a.get(i); }

// Element i of a float array on any device (one element copied to a device).
void set_from_double(const Array& a, int64_t i, double v) {
  const float f = static_cast<float>(v);
  const bool single = a.dtype() == DType::Float32;
  const void* src = single ? static_cast<const void*>(&f) : static_cast<const void*>(&v);
  const size_t w = single ? sizeof f : sizeof v;
  copy_bytes(static_cast<char*>(a.raw_for_write()) + static_cast<size_t>(i) * w, a.device(), src,
             Device{}, w);
}

// The array on the CPU (itself when it is there already).
Array on_cpu(const Array& a) { return a.device().is_cpu() ? a : a.to_device(Device{}); }

// sum_j <grad_outputs[j], outs[j]> in double
double weighted_sum(const Arrays& outs, const Arrays& grad_outputs, const char* who) {
  if (outs.size() != grad_outputs.size())
    fail(CH_ERR_INVALID_ARGUMENT, who, ": the function has ", outs.size(), " outputs but ",
         grad_outputs.size(), " grad_outputs were given");
  double s = 0;
  for (size_t j = 0; j < outs.size(); ++j) {
    const Array y = on_cpu(outs[j]);
    const Array gy = on_cpu(grad_outputs[j]);
    if (y.shape() != gy.shape())
      fail(CH_ERR_SHAPE, who, ": output ", j, " is a ", y.describe(), " but grad_output ", j,
           " is a ", gy.describe());
    for (int64_t k = 0, n = y.size(); k < n; ++k) s += y.get(k) * gy.get(k);
  }
  return s;
}
}  // namespace

Arrays numerical_grad(const std::function<Arrays()>& f, const Arrays& inputs,
                      const Arrays& grad_outputs, double eps) {
  const char* who = "numerical_grad";
  if (!(eps > 0)) fail(CH_ERR_INVALID_ARGUMENT, who, ": eps must be positive, got ", eps);
  for (size_t i = 0; i < inputs.size(); ++i) require_float(inputs[i], who, i);
  Arrays grads;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Array& x = inputs[i];
    Array g = Array::empty(DType::Float64, x.shape());
    for (int64_t k = 0, n = x.size(); k < n; ++k) {
      const double orig = get_as_double(x, k);
      double plus, minus;
      try {
        set_from_double(x, k, orig + eps);
        plus = weighted_sum(f(), grad_outputs, who);
        set_from_double(x, k, orig - eps);
        minus = weighted_sum(f(), grad_outputs, who);
      } catch (...) {
        set_from_double(x, k, orig);
        throw;
      }
      set_from_double(x, k, orig);
      g.data<double>()[k] = (plus - minus) / (2 * eps);
    }
    if (x.dtype() == DType::Float32) {  // return gradients in the input's dtype
      Array g32 = Array::empty(DType::Float32, x.shape());
      for (int64_t k = 0, n = x.size(); k < n; ++k)
        g32.data<float>()[k] = static_cast<float>(g.data<double>()[k]);
      g = g32;
    }
    grads.push_back(x.device().is_cpu() ? g : g.to_device(x.device()));
  }
  // One more evaluation on the restored inputs: a function that keeps state
  // from its last forward (a creator's forward run again on the graph's own
  // arrays, the seed's section 1.4.4 idiom) ends as it was before, not in the
  // state of the last perturbed input.
  bool moved = false;
  for (const Array& x : inputs) moved = moved || x.size() > 0;
  if (moved) f();
  return grads;
}

bool allclose(const Array& a_any, const Array& b_any, double atol, double rtol,
              AllcloseReport* report, std::string* message) {
  if (a_any.shape() != b_any.shape())
    fail(CH_ERR_SHAPE, "allclose: shapes ", a_any.shape().to_string(), " and ",
         b_any.shape().to_string(), " differ");
  const Array a = on_cpu(a_any), b = on_cpu(b_any);
  AllcloseReport r;
  double worst_excess = -INFINITY;
  bool close = true;
  for (int64_t k = 0, n = a.size(); k < n; ++k) {
    double x = a.get(k), y = b.get(k);
    double diff = std::fabs(x - y), tol = atol + rtol * std::fabs(y);
    double excess = diff - tol;
    bool bad = !(diff <= tol) && !(x == y);  // NaN differs; equal infinities are close
    if (std::isnan(excess)) excess = INFINITY;
    if (bad) close = false;
    if (excess > worst_excess) {
      worst_excess = excess;
      r = AllcloseReport{k, x, y, diff, tol};
    }
  }
  if (report) *report = r;
  if (!close && message) {
    // Name the worst element by its multi-index.
    std::ostringstream os;
    os << "arrays differ most at index (";
    int64_t rem = r.worst_index;
    std::vector<int64_t> idx(a.ndim());
    for (int32_t d = a.ndim() - 1; d >= 0; --d) {
      idx[d] = a.shape()[d] ? rem % a.shape()[d] : 0;
      rem = a.shape()[d] ? rem / a.shape()[d] : 0;
    }
    for (int32_t d = 0; d < a.ndim(); ++d) os << (d ? ", " : "") << idx[d];
    char buf[160];
    std::snprintf(buf, sizeof buf, "): actual %.9g, expected %.9g, |diff| %.3g > tolerance %.3g",
                  r.actual, r.expected, r.abs_diff, r.tolerance);
    os << buf << " (atol " << atol << ", rtol " << rtol << ")";
    *message = os.str();
  }
  return close;
}

void check_backward(const std::function<std::vector<VarPtr>(const std::vector<VarPtr>&)>& build,
                    const Arrays& inputs, const Arrays& grad_outputs_in, double eps, double atol,
                    double rtol, bool volatile_eval, bool graph_first_order) {
  const char* who = "check_backward";
  // Work on copies: numerical_grad moves elements in place.
  Arrays xs;
  std::vector<VarPtr> vars;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].defined()) fail(CH_ERR_INVALID_ARGUMENT, who, ": input ", i, " is missing");
    xs.push_back(inputs[i].copy());
    vars.push_back(std::make_shared<VariableImpl>(xs.back()));
  }
  std::vector<VarPtr> ys = build(vars);
  if (ys.size() != grad_outputs_in.size())
    fail(CH_ERR_INVALID_ARGUMENT, who, ": the function has ", ys.size(), " outputs but ",
         grad_outputs_in.size(), " grad_outputs were given");
  Arrays gys;
  for (size_t j = 0; j < ys.size(); ++j) {
    const Array& y = ys[j]->data;
    Array gy = grad_outputs_in[j].defined() ? grad_outputs_in[j]
                                            : Array::full(y.dtype(), y.shape(), 1.0, y.device());
    if (gy.device() != y.device()) gy = gy.to_device(y.device());
    if (gy.shape() != ys[j]->data.shape() || gy.dtype() != ys[j]->data.dtype())
      fail(CH_ERR_SHAPE, who, ": grad_output ", j, " is a ", gy.describe(), " but output ", j,
           " is a ", ys[j]->data.describe());
    gys.push_back(gy);
  }
  // Back-propagate every output at once through a sum of <gy, y>: give each
  // output its grad and run backward from each (gradients of the inputs add up).
  Arrays analytic(vars.size());
  if (graph_first_order) {
    // The gradients a double-backprop pass computes (graph backwards).
    std::vector<VarPtr> seeds;
    for (const Array& g : gys) seeds.push_back(constant_variable(g));
    BackwardOptions opt;
    opt.enable_double_backprop = true;
    std::vector<VarPtr> gxs = grad(ys, vars, seeds, opt);
    for (size_t i = 0; i < vars.size(); ++i)
      if (gxs[i]) analytic[i] = gxs[i]->data.to_device(Device{});
  }
  for (size_t j = 0; j < ys.size() && !graph_first_order; ++j) {
    for (auto& v : vars) v->grad = Array();
    ys[j]->grad = gys[j];
    backward(ys[j], false);
    for (size_t i = 0; i < vars.size(); ++i) {
      if (!vars[i]->grad.defined()) continue;
      if (!analytic[i].defined())
        analytic[i] = vars[i]->grad.to_device(Device{});
      else
        for (int64_t k = 0; k < analytic[i].size(); ++k)
          set_from_double(analytic[i], k, analytic[i].get(k) + vars[i]->grad.get(k));
    }
  }
  // Numerical gradients of the float inputs, re-running the graph volatile.
  Arrays float_xs;
  std::vector<size_t> float_index;
  for (size_t i = 0; i < xs.size(); ++i)
    if (is_floating(xs[i].dtype())) {
      float_xs.push_back(xs[i]);
      float_index.push_back(i);
    }
  auto eval = [&]() {
    std::vector<VarPtr> vs;
    for (const Array& x : xs) vs.push_back(std::make_shared<VariableImpl>(x, volatile_eval));
    Arrays outs;
    for (const VarPtr& y : build(vs)) outs.push_back(y->data);
    return outs;
  };
  Arrays numeric = numerical_grad(eval, float_xs, gys, eps);
  for (size_t n = 0; n < float_index.size(); ++n) {
    size_t i = float_index[n];
    Array a = analytic[i].defined() ? analytic[i] : Array::zeros_like(xs[i]);
    std::string msg;
    if (!allclose(a, numeric[n], atol, rtol, nullptr, &msg))
      fail(CH_ERR_NOT_CLOSE, who, ": the gradient of input ", i, " (", xs[i].describe(),
           ") does not match the numerical gradient (eps ", eps, "): ", msg,
           analytic[i].defined() ? "" : "; backward returned no gradient for it");
  }
}

void check_double_backward(
    const std::function<std::vector<VarPtr>(const std::vector<VarPtr>&)>& build,
    const Arrays& inputs, const Arrays& grad_outputs, const Arrays& grad_grad_inputs, double eps,
    double atol, double rtol) {
  const char* who = "check_double_backward";
  const size_t n = inputs.size();
  for (size_t i = 0; i < n; ++i)
    if (!inputs[i].defined()) fail(CH_ERR_INVALID_ARGUMENT, who, ": input ", i, " is missing");
  if (!grad_grad_inputs.empty() && grad_grad_inputs.size() != n)
    fail(CH_ERR_INVALID_ARGUMENT, who, ": ", n, " inputs but ", grad_grad_inputs.size(),
         " grad_grad_inputs");
  // The output gradients become inputs of the checked function: ones where
  // none is given, shaped as the outputs.
  Arrays gys = grad_outputs;
  {
    std::vector<VarPtr> probe;
    for (const Array& x : inputs) probe.push_back(std::make_shared<VariableImpl>(x, true));
    std::vector<VarPtr> ys = build(probe);
    if (ys.size() != gys.size())
      fail(CH_ERR_INVALID_ARGUMENT, who, ": the function has ", ys.size(), " outputs but ",
           gys.size(), " grad_outputs were given");
    for (size_t j = 0; j < ys.size(); ++j) {
      const Array& y = ys[j]->data;
      if (!gys[j].defined()) gys[j] = Array::full(y.dtype(), y.shape(), 1.0, y.device());
    }
  }
  Arrays all = inputs;
  all.insert(all.end(), gys.begin(), gys.end());
  BackwardOptions opt;
  opt.enable_double_backprop = true;
  auto first_backward = [&](const std::vector<VarPtr>& vs) {
    std::vector<VarPtr> xs(vs.begin(), vs.begin() + static_cast<std::ptrdiff_t>(n));
    std::vector<VarPtr> gy_vars(vs.begin() + static_cast<std::ptrdiff_t>(n), vs.end());
    std::vector<VarPtr> ys = build(xs);
    std::vector<VarPtr> gxs = grad(ys, xs, gy_vars, opt);
    for (size_t i = 0; i < n; ++i)
      if (!gxs[i]) gxs[i] = constant_variable(Array::zeros_like(xs[i]->data));
    return gxs;
  };
  // The first derivative the graph backwards give, against numerical
  // gradients (the second check below takes it as given).
  check_backward(build, inputs, gys, eps, atol, rtol, true, true);
  Arrays ggx = grad_grad_inputs.empty() ? Arrays(n) : grad_grad_inputs;
  check_backward(first_backward, all, ggx, eps, atol, rtol, false);
}

}  // namespace chainerc
