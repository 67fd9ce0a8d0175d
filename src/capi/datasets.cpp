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
  *out = new_array_handle(read_idx(path, dtype_arg(dtype, __func__), scale, __func__));
  CH_API_END
}

}  // extern "C"
