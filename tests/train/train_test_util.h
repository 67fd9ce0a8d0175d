// Helpers for tests/train: RAII owners of function sets and optimizers,
// parameterized user functions ("layers" with W and b), temporary files.
// Built on tests/capi/capi_test_util.h (public C API only).
#pragma once

#include <ch/ch.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include "capi_test_util.h"

namespace train_test {

using namespace capi_test;
using FnSet = Ref<ch_function_set, ch_function_set_release>;
using Opt = Ref<ch_optimizer, ch_optimizer_release>;

// forward: y = x (the tests only need the parameters of these functions).
inline ch_status identity_forward(void*, ch_context* ctx, ch_array* const* inputs, size_t) {
  return ch_context_add_output(ctx, inputs[0]);
}

// A function object named `name` with the given parameters (grads are zeros
// of the same shape and dtype), as a parameterized built-in would have.
inline Fn make_layer(const char* name, std::vector<std::pair<const char*, ch_array*>> params) {
  ch_function_def def{};
  def.version = CH_FUNCTION_DEF_VERSION;
  def.name = name;
  def.forward = identity_forward;
  Fn f;
  EXPECT_EQ(ch_function_new(f.out(), &def), CH_OK) << ch_error_message();
  for (auto& [pname, p] : params) {
    Arr g;
    EXPECT_EQ(ch_array_new_full(g.out(), ch_array_dtype(p), ch_array_shape(p), ch_array_ndim(p),
                                0.0, ch_device_cpu()),
              CH_OK);
    EXPECT_EQ(ch_function_add_parameter(f, pname, p, g), CH_OK) << ch_error_message();
  }
  return f;
}

// A Linear-like layer: W of shape (out, in) with values start, start+1, ...
// (times `scale`) and b of shape (out,) with values -1, -2, ...
inline Fn make_linear(ch_dtype dtype, int64_t in, int64_t out, double start = 0, double scale = 1) {
  std::vector<double> w(static_cast<size_t>(in * out)), b(static_cast<size_t>(out));
  for (size_t i = 0; i < w.size(); ++i) w[i] = (start + static_cast<double>(i)) * scale;
  for (size_t i = 0; i < b.size(); ++i) b[i] = -1.0 - static_cast<double>(i);
  Arr W = make_array(dtype, {out, in}, w);
  Arr B = make_array(dtype, {out}, b);
  return make_layer("Linear", {{"W", W.get()}, {"b", B.get()}});
}

// A fresh directory under $TMPDIR for this test process; path of `name` in it.
inline std::string temp_path(const std::string& name) {
  static std::string dir = [] {
    const char* base = std::getenv("TMPDIR");
    std::string tmpl = std::string(base && base[0] ? base : "/tmp") + "/chainerc_train_XXXXXX";
    std::vector<char> buf(tmpl.begin(), tmpl.end());
    buf.push_back('\0');
    const char* made = mkdtemp(buf.data());
    return std::string(made ? made : "/tmp");
  }();
  return dir + "/" + name;
}

inline std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}
inline void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// The parameter paths of a set, in its order.
inline std::vector<std::string> paths_of(const ch_function_set* set) {
  std::vector<std::string> out;
  for (size_t i = 0; i < ch_function_set_parameter_count(set); ++i) {
    const char* path = nullptr;
    EXPECT_EQ(ch_function_set_parameter(nullptr, nullptr, &path, set, i), CH_OK)
        << ch_error_message();
    out.push_back(path ? path : "");
  }
  return out;
}

// Values of parameter `index` of a set.
inline std::vector<double> param_values(const ch_function_set* set, size_t index) {
  Arr p;
  EXPECT_EQ(ch_function_set_parameter(p.out(), nullptr, nullptr, set, index), CH_OK)
      << ch_error_message();
  return values(p);
}

}  // namespace train_test
