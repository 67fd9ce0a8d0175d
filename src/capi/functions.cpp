// C API: built-in functions. Each shim resolves the handles, calls the op and
// returns a new variable handle.
#include "api.h"
#include "ops/ops.h"

using namespace chainerc;
using namespace chainerc::capi;

#define CH_BINARY(name)                                                              \
  ch_status ch_functions_##name(ch_variable** out, ch_variable* a, ch_variable* b) { \
    CH_API_BEGIN                                                                     \
    require_out(out, __func__);                                                      \
    *out = new_variable_handle(                                                      \
        ops::name(variable_of(a, __func__, "a"), variable_of(b, __func__, "b")));    \
    CH_API_END                                                                       \
  }

#define CH_SCALAR(name)                                                        \
  ch_status ch_functions_##name(ch_variable** out, ch_variable* x, double s) { \
    CH_API_BEGIN                                                               \
    require_out(out, __func__);                                                \
    *out = new_variable_handle(ops::name(variable_of(x, __func__, "x"), s));   \
    CH_API_END                                                                 \
  }

extern "C" {

CH_BINARY(add)
CH_BINARY(sub)
CH_BINARY(mul)
CH_BINARY(div)
CH_SCALAR(add_scalar)
CH_SCALAR(sub_scalar)
CH_SCALAR(rsub_scalar)
CH_SCALAR(mul_scalar)
CH_SCALAR(div_scalar)
CH_SCALAR(rdiv_scalar)
CH_SCALAR(pow_scalar)
CH_SCALAR(rpow_scalar)
CH_UNARY_FUNCTION(neg)
CH_UNARY_FUNCTION(exp)
CH_UNARY_FUNCTION(log)
CH_UNARY_FUNCTION(sum)
CH_UNARY_FUNCTION(identity)

ch_status ch_functions_sum_axis(ch_variable** out, ch_variable* x, int32_t axis, int32_t keepdims) {
  CH_API_BEGIN
  require_out(out, __func__);
  *out = new_variable_handle(ops::sum_axis(variable_of(x, __func__, "x"), axis, keepdims != 0));
  CH_API_END
}

ch_status ch_functions_reshape(ch_variable** out, ch_variable* x, const int64_t* shape,
                               int32_t ndim) {
  CH_API_BEGIN
  require_out(out, __func__);
  if (ndim < 0 || ndim > CH_MAX_NDIM)
    fail(CH_ERR_SHAPE, __func__, ": ndim ", ndim, " is out of range [0, ", CH_MAX_NDIM, "]");
  if (ndim && !shape) fail(CH_ERR_INVALID_ARGUMENT, __func__, ": shape is NULL with ndim ", ndim);
  Shape s;
  for (int32_t i = 0; i < ndim; ++i) s.push_back(shape[i]);  // -1 allowed: resolved by the op
  *out = new_variable_handle(ops::reshape(variable_of(x, __func__, "x"), s));
  CH_API_END
}

ch_status ch_functions_broadcast_to(ch_variable** out, ch_variable* x, const int64_t* shape,
                                    int32_t ndim) {
  CH_API_BEGIN
  require_out(out, __func__);
  *out = new_variable_handle(
      ops::broadcast_to(variable_of(x, __func__, "x"), Shape::from_c(shape, ndim, __func__)));
  CH_API_END
}

}  // extern "C"
