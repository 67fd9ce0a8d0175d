// C API: data sets (IDX files).
#include "api.h"
#include "train/idx.h"

using namespace chainerc;
using namespace chainerc::capi;

extern "C" {

ch_status ch_datasets_read_idx(ch_array** out, const char* path, ch_dtype dtype, double scale) {
  CH_API_BEGIN
  require_out(out, __func__);
  if (!path) fail(CH_ERR_INVALID_ARGUMENT, __func__, ": argument 'path' is NULL");
  if (!is_valid_dtype(dtype)) fail(CH_ERR_DTYPE, __func__, ": dtype ", dtype, " is not a ch_dtype");
  *out = new_array_handle(read_idx(path, static_cast<DType>(dtype), scale, __func__));
  CH_API_END
}

}  // extern "C"
