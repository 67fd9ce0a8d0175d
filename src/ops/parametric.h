// Helpers shared by the parameterized built-in functions (Linear, PReLU,
// Parameter, ...): building a parameter from an optional user array, with its
// zero-filled gradient, and reading parameters back by index.
#pragma once

#include <memory>
#include <string>
#include <utility>

#include "core/array.h"
#include "core/error.h"
#include "core/variable.h"
#include "kernels/connection.h"

namespace chainerc::ops {

// A copy of `src` converted to `dtype` on the default device, where every
// function's parameters live (a copy from another device crosses through
// the devices' backends).
inline Array host_copy(const Array& src, DType dtype) {
  const bool here = src.device() == Device{};
  if (src.dtype() == dtype) return here ? src.copy() : src.to_device(Device{});
  Array out = Array::empty(dtype, src.shape());
  kernels::convert_dtype(here ? src : src.to_device(Device{}), out);
  return out;
}

// The initial value of parameter `arg` of function `who`: a copy of
// *initial converted to `dtype` (its shape must be `shape`), or, when initial
// is null, an array of that dtype and shape for the caller to fill; on the
// default device either way.
inline Array initial_parameter(const char* who, const char* arg, const Array* initial, DType dtype,
                               const Shape& shape) {
  if (!is_floating(dtype))
    fail(CH_ERR_DTYPE, who, ": parameter dtype ", dtype_name(dtype),
         " is not supported (float32 or float64 expected)");
  if (!initial) return Array::empty(dtype, shape);
  if (!initial->defined() || initial->shape() != shape)
    fail(CH_ERR_SHAPE, who, ": initial ", arg, " is a ",
         initial->defined() ? initial->describe() : std::string("undefined array"), "; shape ",
         shape.to_string(), " expected");
  return host_copy(*initial, dtype);
}

// A parameter named `name` holding `param`, with a gradient of zeros.
inline Parameter make_parameter(std::string name, Array param) {
  Array grad = Array::zeros_like(param);
  return Parameter{std::move(name), std::move(param), std::move(grad)};
}

// Parameter i of a function object (its value and accumulated gradient).
inline Parameter& parameter_at(const Function& f, size_t i) { return (*f.parameters)[i]; }

// Parameter i of `f` as a variable, for a graph backward that uses the
// parameter's value (Linear's gx = gy W): the output of a node whose
// backward adds its gradient into the parameter's gradient array (unless
// parameter_grads_enabled() is false, inside ch_grad), so that the second
// pass of a gradient penalty reaches W. Defined in connection/parameter.cpp.
VarPtr parameter_variable(const Function& f, size_t i);

}  // namespace chainerc::ops
