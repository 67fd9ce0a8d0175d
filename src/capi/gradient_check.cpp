// C API: gradient checking.
#include "core/gradient_check.h"

#include "api.h"
#include "capi/callback_function.h"
#include "capi/error_state.h"

using namespace chainerc;
using namespace chainerc::capi;

namespace {

Arrays arrays_of(ch_array* const* hs, size_t n, const char* who, const char* name,
                 bool allow_null) {
  if (n && !hs) fail(CH_ERR_INVALID_ARGUMENT, who, ": ", name, " is NULL with count ", n);
  Arrays out;
  out.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    if (!hs[i] && allow_null) {
      out.emplace_back();
      continue;
    }
    std::string arg = std::string(name) + "[" + std::to_string(i) + "]";
    out.push_back(array_of(hs[i], who, arg.c_str()));
  }
  return out;
}

}  // namespace

namespace {
// The graph callback of ch_check_backward_graph / ch_check_double_backward
// as the core's builder.
std::function<std::vector<VarPtr>(const std::vector<VarPtr>&)> graph_builder(
    ch_graph_callback build_cb, void* user_data, size_t n_outputs) {
  return [build_cb, user_data, n_outputs](const std::vector<VarPtr>& vs) {
    std::vector<ch_variable*> in_handles, out_handles(n_outputs, nullptr);
    struct Cleanup {
      std::vector<ch_variable*>* a;
      std::vector<ch_variable*>* b;
      ~Cleanup() {
        for (auto* v : *a) ch_variable_release(v);
        for (auto* v : *b) ch_variable_release(v);
      }
    } cleanup{&in_handles, &out_handles};
    for (const VarPtr& v : vs) in_handles.push_back(new_variable_handle(v));
    invoke_callback("check_backward graph", "the graph callback", [&] {
      return build_cb(user_data, in_handles.data(), in_handles.size(), out_handles.data(),
                      out_handles.size());
    });
    std::vector<VarPtr> ys;
    for (size_t j = 0; j < out_handles.size(); ++j) {
      std::string arg = "outputs[" + std::to_string(j) + "]";
      ys.push_back(variable_of(out_handles[j], "check_backward graph callback", arg.c_str()));
    }
    return ys;
  };
}
}  // namespace

extern "C" {

ch_status ch_numerical_grad(ch_array** out, ch_eval_callback f, void* user_data,
                            ch_array* const* inputs, size_t n_inputs, ch_array* const* grad_outputs,
                            size_t n_grad_outputs, double eps) {
  CH_API_BEGIN
  if (n_inputs && !out) fail(CH_ERR_INVALID_ARGUMENT, __func__, ": out is NULL");
  for (size_t i = 0; i < n_inputs; ++i) out[i] = nullptr;
  if (!f) fail(CH_ERR_INVALID_ARGUMENT, __func__, ": the callback f is NULL");
  Arrays xs = arrays_of(inputs, n_inputs, __func__, "inputs", false);
  Arrays gys = arrays_of(grad_outputs, n_grad_outputs, __func__, "grad_outputs", false);
  auto eval = [&]() {
    Arrays outs;
    CallbackContext state{CallbackContext::Phase::Eval, "numerical_grad callback", nullptr};
    state.outputs = &outs;
    ScopedContext ctx(state);
    invoke_callback("numerical_grad callback", "evaluation",
                    [&] { return f(user_data, ctx.handle()); });
    return outs;
  };
  Arrays grads = numerical_grad(eval, xs, gys, eps);
  for (size_t i = 0; i < grads.size(); ++i) out[i] = new_array_handle(grads[i]);
  CH_API_END
}

ch_status ch_allclose(const ch_array* a, const ch_array* b, double atol, double rtol,
                      ch_allclose_report* report) {
  CH_API_BEGIN
  std::string msg;
  AllcloseReport r;
  const bool close =
      allclose(array_of(a, __func__, "a"), array_of(b, __func__, "b"), atol, rtol, &r, &msg);
  if (report)
    *report = ch_allclose_report{r.worst_index, r.actual, r.expected, r.abs_diff, r.tolerance};
  if (!close) fail(CH_ERR_NOT_CLOSE, __func__, ": ", msg);
  CH_API_END
}

ch_status ch_check_backward(ch_function* function, ch_array* const* inputs, size_t n_inputs,
                            ch_array* const* grad_outputs, size_t n_grad_outputs, double eps,
                            double atol, double rtol) {
  CH_API_BEGIN
  FuncPtr f = function_of(function, __func__, "function");
  if (!f->clone())
    fail(CH_ERR_INVALID_ARGUMENT, __func__, ": '", f->name(),
         "' is a built-in node; use ch_check_backward_graph");
  Arrays xs = arrays_of(inputs, n_inputs, __func__, "inputs", false);
  Arrays gys;
  auto build = [&](const std::vector<VarPtr>& vs) { return apply_function(f->clone(), vs); };
  if (grad_outputs) {
    gys = arrays_of(grad_outputs, n_grad_outputs, __func__, "grad_outputs", true);
  } else {
    // NULL list: ones for every output; learn how many outputs there are.
    std::vector<VarPtr> probe;
    for (const Array& x : xs) probe.push_back(std::make_shared<VariableImpl>(x, true));
    gys.resize(build(probe).size());
  }
  check_backward(build, xs, gys, eps, atol, rtol);
  CH_API_END
}

ch_status ch_check_backward_graph(ch_graph_callback build_cb, void* user_data,
                                  ch_array* const* inputs, size_t n_inputs,
                                  ch_array* const* grad_outputs, size_t n_grad_outputs, double eps,
                                  double atol, double rtol) {
  CH_API_BEGIN
  if (!build_cb) fail(CH_ERR_INVALID_ARGUMENT, __func__, ": the callback build is NULL");
  if (!grad_outputs && n_grad_outputs)
    fail(CH_ERR_INVALID_ARGUMENT, __func__, ": grad_outputs is NULL with count ", n_grad_outputs);
  Arrays xs = arrays_of(inputs, n_inputs, __func__, "inputs", false);
  Arrays gys = arrays_of(grad_outputs, n_grad_outputs, __func__, "grad_outputs", true);
  auto build = graph_builder(build_cb, user_data, gys.size());
  check_backward(build, xs, gys, eps, atol, rtol);
  CH_API_END
}

ch_status ch_check_double_backward(ch_graph_callback build_cb, void* user_data,
                                   ch_array* const* inputs, size_t n_inputs,
                                   ch_array* const* grad_outputs, size_t n_grad_outputs,
                                   ch_array* const* grad_grad_inputs, size_t n_grad_grad_inputs,
                                   double eps, double atol, double rtol) {
  CH_API_BEGIN
  if (!build_cb) fail(CH_ERR_INVALID_ARGUMENT, __func__, ": the callback build is NULL");
  if (!grad_outputs && n_grad_outputs)
    fail(CH_ERR_INVALID_ARGUMENT, __func__, ": grad_outputs is NULL with count ", n_grad_outputs);
  if (grad_grad_inputs && n_grad_grad_inputs != n_inputs)
    fail(CH_ERR_INVALID_ARGUMENT, __func__, ": ", n_inputs, " inputs but ", n_grad_grad_inputs,
         " grad_grad_inputs");
  Arrays xs = arrays_of(inputs, n_inputs, __func__, "inputs", false);
  Arrays gys = arrays_of(grad_outputs, n_grad_outputs, __func__, "grad_outputs", true);
  Arrays ggxs = grad_grad_inputs ? arrays_of(grad_grad_inputs, n_grad_grad_inputs, __func__,
                                             "grad_grad_inputs", true)
                                 : Arrays();
  check_double_backward(graph_builder(build_cb, user_data, gys.size()), xs, gys, ggxs, eps, atol,
                        rtol);
  CH_API_END
}

}  // extern "C"
