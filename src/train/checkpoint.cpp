// Checkpoints: which keys a FunctionSet and an Optimizer write to and read
// from an .npz file (Chainer's layout), built on the codec of npz_codec.h.
#include "checkpoint.h"

#include "core/device_backend.h"
#include "core/error.h"
#include "npz_codec.h"

namespace chainerc::npz {
namespace {
// dst (any device) = host array `value` of its dtype and shape.
void write_into(const Array& dst, const Array& value) {
  if (dst.nbytes())
    copy_bytes(dst.raw_for_write(), dst.device(), value.raw(), Device{}, dst.nbytes());
}
}  // namespace

void save_function_set(const FunctionSet& set, const std::string& path, bool compress,
                       const char* who) {
  std::vector<std::pair<std::string, std::string>> entries;
  for (const NamedParameter& p : set.parameters()) entries.emplace_back(p.path, encode(p.param));
  write_npz(path, entries, compress, who);
}

void load_function_set(const FunctionSet& set, const std::string& path, const char* who) {
  std::vector<NamedParameter> params = set.parameters();
  Reader r(path, who);
  Arrays values;
  values.reserve(params.size());
  for (const NamedParameter& p : params) {
    const Target target{p.param.dtype(), p.param.shape()};
    values.push_back(
        to_array(r.read(p.path, &target), path, p.path, p.param.dtype(), p.param.shape(), who));
  }
  // Everything is valid: now write (to the parameters' devices).
  for (size_t i = 0; i < params.size(); ++i) write_into(params[i].param, values[i]);
}

void save_optimizer(const Optimizer& opt, const std::string& path, bool compress, const char* who) {
  opt.require_setup(who);
  std::vector<std::pair<std::string, std::string>> entries;
  entries.emplace_back("t", encode_int64_scalar(opt.t));
  entries.emplace_back("epoch", encode_int64_scalar(opt.epoch));
  for (const OptSlot& s : opt.slots) {
    entries.emplace_back(s.path + "/t", encode_int64_scalar(opt.t));
    for (size_t i = 0; i < s.state.size(); ++i) entries.emplace_back(s.keys[i], encode(s.state[i]));
  }
  write_npz(path, entries, compress, who);
}

namespace {
int64_t read_count(const Reader& r, const std::string& path, const std::string& key,
                   const char* who) {
  NpyArray a = r.read(key);
  Array v = to_array_any(a, path, key, who);
  if (v.size() != 1 || v.dtype() != DType::Int32 || v.ndim() > 1)
    fail(CH_ERR_DTYPE, who, ": '", path, "' key '", key, "' should be an integer scalar but is a ",
         v.describe());
  int64_t t = v.data<int32_t>()[0];
  if (t < 0)
    fail(CH_ERR_INVALID_ARGUMENT, who, ": '", path, "' key '", key, "' is ", t,
         "; it must be >= 0");
  return t;
}
}  // namespace

void load_optimizer(Optimizer& opt, const std::string& path, const char* who) {
  opt.require_setup(who);
  Reader r(path, who);
  int64_t t = read_count(r, path, "t", who);
  int64_t epoch = r.has("epoch") ? read_count(r, path, "epoch", who) : opt.epoch;
  std::vector<Arrays> values(opt.slots.size());
  for (size_t k = 0; k < opt.slots.size(); ++k) {
    const OptSlot& s = opt.slots[k];
    for (size_t i = 0; i < s.state.size(); ++i) {
      const Target target{s.state[i].dtype(), s.state[i].shape()};
      values[k].push_back(to_array(r.read(s.keys[i], &target), path, s.keys[i], s.state[i].dtype(),
                                   s.state[i].shape(), who));
    }
  }
  for (size_t k = 0; k < opt.slots.size(); ++k) {
    OptSlot& s = opt.slots[k];
    for (size_t i = 0; i < s.state.size(); ++i) write_into(s.state[i], values[k][i]);
  }
  opt.t = t;
  opt.epoch = epoch;
}

}  // namespace chainerc::npz
