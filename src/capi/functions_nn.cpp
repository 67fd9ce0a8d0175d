// C API: the neural-network built-in functions (activations, Linear,
// Parameter, PReLU, matmul, transpose/concat/copy, losses, accuracy,
// dropout). Each shim resolves the handles and calls the op.
#include <vector>

#include "api.h"
#include "core/config.h"
#include "ops/ops.h"

using namespace chainerc;
using namespace chainerc::capi;

extern "C" {

// ---- activation

CH_UNARY_FUNCTION(relu)
CH_UNARY_FUNCTION(sigmoid)
CH_UNARY_FUNCTION(tanh)
CH_UNARY_FUNCTION(softmax)

ch_status ch_functions_leaky_relu(ch_variable** out, ch_variable* x, double slope) {
  CH_API_BEGIN
  require_out(out, __func__);
  *out = new_variable_handle(ops::leaky_relu(variable_of(x, __func__, "x"), slope));
  CH_API_END
}

ch_status ch_functions_prelu_new(ch_function** out, const int64_t* shape, int32_t ndim,
                                 ch_dtype dtype, double init) {
  CH_API_BEGIN
  require_out(out, __func__);
  Shape s = Shape::from_c(shape, ndim, __func__);
  *out = new_function_handle(ops::prelu_new(s, float_dtype_arg(dtype, __func__), init));
  CH_API_END
}

// ---- connection

ch_status ch_functions_linear_new(ch_function** out, int64_t in_size, int64_t out_size,
                                  ch_dtype dtype, double wscale, double bias, int32_t nobias,
                                  const ch_array* initial_W, const ch_array* initial_b) {
  CH_API_BEGIN
  require_out(out, __func__);
  const Array* w = initial_W ? &array_of(initial_W, __func__, "initial_W") : nullptr;
  const Array* b = initial_b ? &array_of(initial_b, __func__, "initial_b") : nullptr;
  *out = new_function_handle(ops::linear_new(in_size, out_size, float_dtype_arg(dtype, __func__),
                                             wscale, bias, nobias != 0, w, b));
  CH_API_END
}

ch_status ch_functions_parameter_new(ch_function** out, const ch_array* initial) {
  CH_API_BEGIN
  require_out(out, __func__);
  *out = new_function_handle(ops::parameter_new(array_of(initial, __func__, "initial")));
  CH_API_END
}

// ---- array

ch_status ch_functions_transpose(ch_variable** out, ch_variable* x, const int32_t* axes,
                                 int32_t naxes) {
  CH_API_BEGIN
  require_out(out, __func__);
  *out = new_variable_handle(ops::transpose(variable_of(x, __func__, "x"), axes, naxes));
  CH_API_END
}

ch_status ch_functions_concat(ch_variable** out, ch_variable* const* xs, size_t n, int32_t axis) {
  CH_API_BEGIN
  require_out(out, __func__);
  if (n == 0) fail(CH_ERR_INVALID_ARGUMENT, __func__, ": no inputs (n is 0)");
  if (!xs) fail(CH_ERR_INVALID_ARGUMENT, __func__, ": xs is NULL with n ", n);
  std::vector<VarPtr> vs;
  vs.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    std::string arg = "xs[" + std::to_string(i) + "]";
    vs.push_back(variable_of(xs[i], __func__, arg.c_str()));
  }
  *out = new_variable_handle(ops::concat(vs, axis));
  CH_API_END
}

ch_status ch_functions_copy(ch_variable** out, ch_variable* x, ch_device dst) {
  CH_API_BEGIN
  require_out(out, __func__);
  *out = new_variable_handle(ops::copy(variable_of(x, __func__, "x"), Device::from_c(dst)));
  CH_API_END
}

// ---- math

ch_status ch_functions_matmul(ch_variable** out, ch_variable* a, ch_variable* b, int32_t transa,
                              int32_t transb) {
  CH_API_BEGIN
  require_out(out, __func__);
  *out = new_variable_handle(ops::matmul(variable_of(a, __func__, "a"),
                                         variable_of(b, __func__, "b"), transa != 0, transb != 0));
  CH_API_END
}

ch_status ch_functions_batch_matmul(ch_variable** out, ch_variable* a, ch_variable* b,
                                    int32_t transa, int32_t transb) {
  CH_API_BEGIN
  require_out(out, __func__);
  *out = new_variable_handle(ops::batch_matmul(
      variable_of(a, __func__, "a"), variable_of(b, __func__, "b"), transa != 0, transb != 0));
  CH_API_END
}

// ---- loss and evaluation

ch_status ch_functions_softmax_cross_entropy(ch_variable** out, ch_variable* x, ch_variable* t) {
  CH_API_BEGIN
  require_out(out, __func__);
  *out = new_variable_handle(
      ops::softmax_cross_entropy(variable_of(x, __func__, "x"), variable_of(t, __func__, "t")));
  CH_API_END
}

ch_status ch_functions_mean_squared_error(ch_variable** out, ch_variable* x0, ch_variable* x1) {
  CH_API_BEGIN
  require_out(out, __func__);
  *out = new_variable_handle(
      ops::mean_squared_error(variable_of(x0, __func__, "x0"), variable_of(x1, __func__, "x1")));
  CH_API_END
}

ch_status ch_functions_accuracy(ch_variable** out, ch_variable* y, ch_variable* t) {
  CH_API_BEGIN
  require_out(out, __func__);
  *out = new_variable_handle(
      ops::accuracy(variable_of(y, __func__, "y"), variable_of(t, __func__, "t")));
  CH_API_END
}

// ---- noise

ch_status ch_functions_dropout(ch_variable** out, ch_variable* x, double ratio, int32_t train) {
  CH_API_BEGIN
  require_out(out, __func__);
  *out = new_variable_handle(
      ops::dropout(variable_of(x, __func__, "x"), ratio, config::resolve_train(train)));
  CH_API_END
}

}  // extern "C"
