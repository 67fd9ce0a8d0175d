// C API: .npz checkpoints of function sets and optimizers.
#include "train/checkpoint.h"
#include "train/npz_codec.h"
#include "train_api.h"

using namespace chainerc;
using namespace chainerc::capi;

namespace {
bool compress_flag(int32_t flags, const char* who) {
  if (flags != CH_NPZ_STORED && flags != CH_NPZ_COMPRESSED)
    fail(CH_ERR_INVALID_ARGUMENT, who, ": flags is ", flags,
         "; use CH_NPZ_STORED (0) or CH_NPZ_COMPRESSED (1)");
  return flags == CH_NPZ_COMPRESSED;
}
}  // namespace

extern "C" {

ch_status ch_function_set_save_npz(const ch_function_set* set, const char* path, int32_t flags) {
  CH_API_BEGIN
  FunctionSetPtr s = function_set_of(set, __func__, "set");
  npz::save_function_set(*s, string_arg(path, __func__, "path"), compress_flag(flags, __func__),
                         __func__);
  CH_API_END
}

ch_status ch_function_set_load_npz(ch_function_set* set, const char* path) {
  CH_API_BEGIN
  FunctionSetPtr s = function_set_of(set, __func__, "set");
  npz::load_function_set(*s, string_arg(path, __func__, "path"), __func__);
  CH_API_END
}

ch_status ch_optimizer_save_npz(const ch_optimizer* optimizer, const char* path, int32_t flags) {
  CH_API_BEGIN
  OptimizerPtr o = optimizer_of(optimizer, __func__, "optimizer");
  npz::save_optimizer(*o, string_arg(path, __func__, "path"), compress_flag(flags, __func__),
                      __func__);
  CH_API_END
}

ch_status ch_optimizer_load_npz(ch_optimizer* optimizer, const char* path) {
  CH_API_BEGIN
  OptimizerPtr o = optimizer_of(optimizer, __func__, "optimizer");
  npz::load_optimizer(*o, string_arg(path, __func__, "path"), __func__);
  CH_API_END
}

ch_status ch_serializers_save_npz_arrays(const char* path, const char* const* keys,
                                         ch_array* const* arrays, size_t n, int32_t flags) {
  CH_API_BEGIN
  std::string p = string_arg(path, __func__, "path");
  bool compress = compress_flag(flags, __func__);
  if (n && (!keys || !arrays))
    fail(CH_ERR_INVALID_ARGUMENT, __func__, ": ", !keys ? "keys" : "arrays", " is NULL with n ", n);
  std::vector<std::pair<std::string, std::string>> entries;
  for (size_t i = 0; i < n; ++i) {
    std::string ka = "keys[" + std::to_string(i) + "]", aa = "arrays[" + std::to_string(i) + "]";
    std::string key = string_arg(keys[i], __func__, ka.c_str());
    entries.emplace_back(key, npz::encode(array_of(arrays[i], __func__, aa.c_str())));
  }
  npz::write_npz(p, entries, compress, __func__);
  CH_API_END
}

ch_status ch_serializers_load_npz_array(ch_array** out, const char* path, const char* key) {
  CH_API_BEGIN
  require_out(out, __func__);
  std::string p = string_arg(path, __func__, "path");
  std::string k = string_arg(key, __func__, "key");
  npz::Reader r(p, __func__);
  *out = new_array_handle(npz::to_array_any(r.read(k), p, k, __func__));
  CH_API_END
}

}  // extern "C"
