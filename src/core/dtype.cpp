#include "dtype.h"

namespace chainerc {

const char* dtype_name(DType d) {
  switch (d) {
    case DType::Float32:
      return "float32";
    case DType::Float64:
      return "float64";
    case DType::Int32:
      return "int32";
  }
  return "unknown";
}

std::string Device::to_string() const {
  if (type == CH_DEVICE_CPU) return "cpu";
  if (type == CH_DEVICE_CUDA) return "cuda:" + std::to_string(index);
  return "device(type=" + std::to_string(type) + ", index=" + std::to_string(index) + ")";
}

}  // namespace chainerc
