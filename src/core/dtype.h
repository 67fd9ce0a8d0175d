// Element types and devices as values (the C enums), with helpers.
#pragma once

#include <ch/common.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace chainerc {

enum class DType : int32_t { Float32 = CH_FLOAT32, Float64 = CH_FLOAT64, Int32 = CH_INT32 };

inline bool is_valid_dtype(int32_t d) {
  return d == CH_FLOAT32 || d == CH_FLOAT64 || d == CH_INT32;
}
inline bool is_floating(DType d) { return d == DType::Float32 || d == DType::Float64; }
inline size_t dtype_size(DType d) { return d == DType::Float64 ? 8 : 4; }
const char* dtype_name(DType d);

// Call f(T{}) with T the C++ type of a floating dtype; Error for others.
template <typename F>
decltype(auto) dispatch_floating(DType d, const char* who, F&& f);

struct Device {
  int32_t type = CH_DEVICE_CPU;
  int32_t index = 0;
  bool is_cpu() const { return type == CH_DEVICE_CPU; }
  bool operator==(const Device& o) const { return type == o.type && index == o.index; }
  bool operator!=(const Device& o) const { return !(*this == o); }
  std::string to_string() const;
  static Device from_c(ch_device d) { return Device{d.type, d.index}; }
  ch_device to_c() const { return ch_device{type, index}; }
};

}  // namespace chainerc

#include "error.h"

namespace chainerc {
template <typename F>
decltype(auto) dispatch_floating(DType d, const char* who, F&& f) {
  switch (d) {
    case DType::Float32:
      return f(float{});
    case DType::Float64:
      return f(double{});
    default:
      fail(CH_ERR_DTYPE, who, ": dtype ", dtype_name(d),
           " is not supported (float32 or float64 expected)");
  }
}
// f(T{}) for the element type T of any dtype (float, double, int32_t).
template <typename F>
decltype(auto) dispatch_any(DType d, F&& f) {
  switch (d) {
    case DType::Float32:
      return f(float{});
    case DType::Float64:
      return f(double{});
    default:
      return f(int32_t{});
  }
}
}  // namespace chainerc
