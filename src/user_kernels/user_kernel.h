// User kernels from source strings (the seed's cuda.elementwise and
// cuda.reduce, CuPy's ElementwiseKernel and ReductionKernel): parameter
// parsing, type resolution against the arguments' dtypes, broadcasting, and
// dispatch to the CPU (C compiled in memory by libtcc) or to CUDA (NVRTC,
// cuda/user_kernels/). The code generators live in codegen.h.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/array.h"

namespace chainerc::kernels {

// One "type name" entry of a parameter list.
struct Param {
  std::string name;
  bool raw = false;              // "raw T x": the whole array, indexed by the user
  bool placeholder = false;      // a single capital letter resolved from the arguments
  std::string type;              // placeholder letter, or the dtype name as written
  DType dtype = DType::Float32;  // when !placeholder
};

// Parses "float32 x, T y, raw T z"; Error(CH_ERR_INVALID_ARGUMENT) naming `what`
// ("in_params"/"out_params") and the offending entry.
std::vector<Param> parse_params(const std::string& text, const char* what, const char* who);

// The C type of a dtype: "float", "double", "int".
const char* c_type(DType d);

// Placeholder letter -> dtype, as resolved for one call.
using TypeMap = std::map<std::string, DType>;

// Per-kernel memo of what one specialization (target, dtypes, access modes)
// needs: its generated source and, on the CPU, the compiled function, so a
// call does not regenerate and rehash the source.
class SpecializationMemo {
 public:
  struct Entry {
    std::string source;
    void* cpu_fn = nullptr;  // cpu_jit::KernelFn
  };
  // The entry for `key`, made by `make` (called without the lock) when missing.
  // Entries are never removed, so the reference stays valid.
  template <typename Make>
  const Entry& get(const std::string& key, Make&& make) const {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = entries_.find(key);
      if (it != entries_.end()) return it->second;
    }
    Entry e = make();
    std::lock_guard<std::mutex> lock(mutex_);
    return entries_.emplace(key, std::move(e)).first->second;
  }

 private:
  mutable std::mutex mutex_;
  mutable std::map<std::string, Entry> entries_;
};

class ElementwiseKernel {
 public:
  ElementwiseKernel(const std::string& in_params, const std::string& out_params,
                    const std::string& operation, const std::string& name);
  const std::vector<Param>& in() const { return in_; }
  const std::vector<Param>& out() const { return out_; }
  const std::string& operation() const { return operation_; }
  const std::string& name() const { return name_; }
  // outputs[i] undefined = allocate. Returns the outputs.
  std::vector<Array> call(const std::vector<Array>& inputs, std::vector<Array> outputs) const;

 private:
  std::vector<Param> in_, out_;
  std::string operation_, name_;
  SpecializationMemo memo_;
};

class ReductionKernel {
 public:
  ReductionKernel(const std::string& in_params, const std::string& out_params,
                  const std::string& map_expr, const std::string& reduce_expr,
                  const std::string& post_map_expr, const std::string& identity,
                  const std::string& name, const std::string& reduce_type);
  const std::vector<Param>& in() const { return in_; }
  const std::vector<Param>& out() const { return out_; }
  const std::string& map_expr() const { return map_expr_; }
  const std::string& reduce_expr() const { return reduce_expr_; }
  const std::string& post_map_expr() const { return post_map_expr_; }
  const std::string& identity() const { return identity_; }  // "" = none
  const std::string& name() const { return name_; }
  const std::string& reduce_type() const { return reduce_type_; }  // "" = first output's
  // axes empty + all_axes: reduce every axis.
  std::vector<Array> call(const std::vector<Array>& inputs, std::vector<Array> outputs,
                          const std::vector<int32_t>& axes, bool all_axes, bool keepdims) const;

 private:
  std::vector<Param> in_, out_;
  std::string map_expr_, reduce_expr_, post_map_expr_, identity_, name_, reduce_type_;
  SpecializationMemo memo_;
};

}  // namespace chainerc::kernels
