// C API: convolution, pooling and normalization functions (Convolution2D,
// Inception, max/average pooling, local response normalization,
// BatchNormalization).
#include "api.h"
#include "core/config.h"
#include "ops/ops.h"

using namespace chainerc;
using namespace chainerc::capi;

extern "C" {

ch_status ch_functions_convolution_2d_new(ch_function** out, int64_t in_channels,
                                          int64_t out_channels, int64_t kh, int64_t kw, int64_t sy,
                                          int64_t sx, int64_t ph, int64_t pw, ch_dtype dtype,
                                          double wscale, double bias, int32_t nobias,
                                          const ch_array* initial_W, const ch_array* initial_b) {
  CH_API_BEGIN
  require_out(out, __func__);
  const Array* w = initial_W ? &array_of(initial_W, __func__, "initial_W") : nullptr;
  const Array* b = initial_b && !nobias ? &array_of(initial_b, __func__, "initial_b") : nullptr;
  *out = new_function_handle(ops::convolution_2d_new(in_channels, out_channels, kh, kw, sy, sx, ph,
                                                     pw, float_dtype_arg(dtype, __func__), wscale,
                                                     bias, nobias != 0, w, b));
  CH_API_END
}

ch_status ch_functions_inception_new(ch_function** out, int64_t in_channels, int64_t out1,
                                     int64_t proj3, int64_t out3, int64_t proj5, int64_t out5,
                                     int64_t proj_pool, ch_dtype dtype) {
  CH_API_BEGIN
  require_out(out, __func__);
  *out = new_function_handle(ops::inception_new(in_channels, out1, proj3, out3, proj5, out5,
                                                proj_pool, float_dtype_arg(dtype, __func__)));
  CH_API_END
}

ch_status ch_functions_max_pooling_2d(ch_variable** out, ch_variable* x, int64_t kh, int64_t kw,
                                      int64_t sy, int64_t sx, int64_t ph, int64_t pw,
                                      int32_t cover_all) {
  CH_API_BEGIN
  require_out(out, __func__);
  *out = new_variable_handle(
      ops::max_pooling_2d(variable_of(x, __func__, "x"), kh, kw, sy, sx, ph, pw, cover_all != 0));
  CH_API_END
}

ch_status ch_functions_average_pooling_2d(ch_variable** out, ch_variable* x, int64_t kh, int64_t kw,
                                          int64_t sy, int64_t sx, int64_t ph, int64_t pw) {
  CH_API_BEGIN
  require_out(out, __func__);
  *out = new_variable_handle(
      ops::average_pooling_2d(variable_of(x, __func__, "x"), kh, kw, sy, sx, ph, pw));
  CH_API_END
}

ch_status ch_functions_local_response_normalization(ch_variable** out, ch_variable* x, int32_t n,
                                                    double k, double alpha, double beta) {
  CH_API_BEGIN
  require_out(out, __func__);
  *out = new_variable_handle(
      ops::local_response_normalization(variable_of(x, __func__, "x"), n, k, alpha, beta));
  CH_API_END
}

ch_status ch_functions_batch_normalization_new(ch_function** out, const int64_t* size, int32_t ndim,
                                               double decay, double eps, ch_dtype dtype) {
  CH_API_BEGIN
  require_out(out, __func__);
  *out = new_function_handle(ops::batch_normalization_new(
      Shape::from_c(size, ndim, __func__), decay, eps, float_dtype_arg(dtype, __func__)));
  CH_API_END
}

ch_status ch_functions_batch_normalization_apply(ch_variable** out, ch_function* bn, ch_variable* x,
                                                 int32_t train, int32_t finetune) {
  CH_API_BEGIN
  require_out(out, __func__);
  FuncPtr f = function_of(bn, __func__, "bn");
  VarPtr v = variable_of(x, __func__, "x");
  *out = new_variable_handle(
      apply1(ops::batch_normalization_node(f, config::resolve_train(train), finetune != 0), {v}));
  CH_API_END
}

ch_status ch_functions_batch_normalization_state(ch_array** avg_mean, ch_array** avg_var,
                                                 const ch_function* bn) {
  if (avg_mean) *avg_mean = nullptr;
  if (avg_var) *avg_var = nullptr;
  CH_API_BEGIN
  auto state = ops::batch_normalization_state(function_of(bn, __func__, "bn"));
  ch_array* m = avg_mean ? new_array_handle(state->avg_mean) : nullptr;
  try {
    if (avg_var) *avg_var = new_array_handle(state->avg_var);
  } catch (...) {
    ch_array_release(m);
    throw;
  }
  if (avg_mean) *avg_mean = m;
  CH_API_END
}

ch_status ch_functions_batch_normalization_start_finetuning(ch_function* bn) {
  CH_API_BEGIN
  ops::batch_normalization_state(function_of(bn, __func__, "bn"))->n = 0;
  CH_API_END
}

}  // extern "C"
