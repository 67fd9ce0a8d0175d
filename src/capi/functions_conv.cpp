// C API: the shims of Convolution2D and BatchNormalization that are not
// mechanical. The mechanical ones (Inception, the poolings, local response
// normalization, BatchNormalization's constructor) are generated into
// functions_gen.cpp from src/ops/manifest.py (scripts/gen_functions.py).
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
