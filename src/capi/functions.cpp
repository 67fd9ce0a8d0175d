// C API: the built-in functions whose shim is not mechanical: reshape (its
// shape may hold -1) and concat (n borrowed handles). The mechanical ones are generated into
// functions_gen.cpp from src/ops/manifest.py (scripts/gen_functions.py).
#include <string>
#include <vector>

#include "api.h"
#include "ops/ops.h"

using namespace chainerc;
using namespace chainerc::capi;

extern "C" {

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

ch_status ch_functions_concat(ch_variable** out, ch_variable* const* xs, size_t n, int32_t axis) {
  CH_API_BEGIN
  require_out(out, __func__);
  if (n == 0) fail(CH_ERR_INVALID_ARGUMENT, __func__, ": no inputs (n is 0)");
  *out = new_variable_handle(ops::concat(variables_of(xs, n, __func__, "xs", "n"), axis));
  CH_API_END
}

}  // extern "C"
