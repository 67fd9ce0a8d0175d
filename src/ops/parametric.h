// Helpers shared by the parameterized built-in functions (Linear, PReLU,
// Parameter, ...): building a parameter from an optional user array, with its
// zero-filled gradient, and reading parameters back by index.
#pragma once

#include <memory>
#include <string>
#include <type_traits>
#include <utility>

#include "core/array.h"
#include "core/error.h"
#include "core/variable.h"

namespace chainerc::ops {

// A copy of `src` converted to `dtype` (any dtype to float32/float64/int32).
inline Array converted_copy(const Array& src, DType dtype) {
  if (!src.device().is_cpu())
    fail(CH_ERR_UNSUPPORTED, "cannot copy ", src.describe(), ": no CUDA backend in this build");
  if (src.dtype() == dtype) return src.copy();
  Array out = Array::empty(dtype, src.shape(), src.device());
  auto convert = [&](auto* dst) {
    using D = std::remove_pointer_t<decltype(dst)>;
    const int64_t n = src.size();
    switch (src.dtype()) {
      case DType::Float32:
        for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<D>(src.data<float>()[i]);
        break;
      case DType::Float64:
        for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<D>(src.data<double>()[i]);
        break;
      case DType::Int32:
        for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<D>(src.data<int32_t>()[i]);
        break;
    }
  };
  switch (dtype) {
    case DType::Float32:
      convert(out.data<float>());
      break;
    case DType::Float64:
      convert(out.data<double>());
      break;
    case DType::Int32:
      convert(out.data<int32_t>());
      break;
  }
  return out;
}

// The initial value of parameter `arg` of function `who`: a copy of
// *initial converted to `dtype` (its shape must be `shape`), or, when initial
// is null, an array of that dtype and shape for the caller to fill.
inline Array initial_parameter(const char* who, const char* arg, const Array* initial, DType dtype,
                               const Shape& shape) {
  if (!is_floating(dtype))
    fail(CH_ERR_DTYPE, who, ": parameter dtype ", dtype_name(dtype),
         " is not supported (float32 or float64 expected)");
  if (!initial) return Array::empty(dtype, shape);
  if (initial->shape() != shape)
    fail(CH_ERR_SHAPE, who, ": initial ", arg, " has shape ", initial->shape().to_string(), " but ",
         shape.to_string(), " is expected");
  return converted_copy(*initial, dtype);
}

// A parameter named `name` holding `param`, with a gradient of zeros.
inline Parameter make_parameter(std::string name, Array param) {
  Array grad = Array::zeros_like(param);
  return Parameter{std::move(name), std::move(param), std::move(grad)};
}

// Parameter i of a function object (its value and accumulated gradient).
inline Parameter& parameter_at(const Function& f, size_t i) { return (*f.parameters)[i]; }

}  // namespace chainerc::ops
