// User kernels from source strings (the seed's cuda.elementwise and
// cuda.reduce, CuPy's ElementwiseKernel and ReductionKernel): parameter
// parsing, type resolution against the arguments' dtypes, broadcasting, and
// dispatch to the CPU (C compiled in memory by libtcc) or to CUDA (NVRTC,
// cuda/kernels/). The code generators live in codegen.h.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
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
};

}  // namespace chainerc::kernels
