#include "device_backend.h"

#include "array.h"
#include "error.h"

namespace chainerc {

#if CH_HAVE_CUDA
namespace cuda {
DeviceBackend& backend();  // cuda/runtime/backend.cpp
}
DeviceBackend* cuda_backend() { return &cuda::backend(); }
#else
DeviceBackend* cuda_backend() { return nullptr; }
#endif

void DeviceBackend::accumulate(Array& acc, const Array&) {
  fail(CH_ERR_DEVICE, "backward: adding gradients on ", acc.device().to_string(),
       " needs the device's add kernel, which this build does not have");
}

void DeviceBackend::begin_capture(int32_t index) {
  fail(CH_ERR_UNSUPPORTED, "graph capture: device ", index,
       " of this backend cannot capture its work into a graph");
}

std::shared_ptr<DeviceGraph> DeviceBackend::end_capture(int32_t index) {
  fail(CH_ERR_UNSUPPORTED, "graph capture: device ", index,
       " of this backend cannot capture its work into a graph");
}

DeviceBackend& backend_for(Device device, const char* who) {
  if (device.is_cpu()) {
    if (device.index != 0)
      fail(CH_ERR_DEVICE, who, ": ", device.to_string(), " does not exist (the CPU is cpu:0)");
    return cpu_backend();
  }
  if (device.type == CH_DEVICE_CUDA) {
    DeviceBackend* b = cuda_backend();
    if (!b)
      fail(CH_ERR_DEVICE, who, ": ", device.to_string(),
           " was requested but this build of chainerc has no CUDA backend (built with "
           "-Dcuda=disabled "
           "or without the CUDA toolkit)");
    b->require_device(device.index, who);
    return *b;
  }
  fail(CH_ERR_DEVICE, who, ": ", device.to_string(), " is not a device with a backend");
}

}  // namespace chainerc

namespace chainerc {

void copy_bytes(void* dst, Device dst_device, const void* src, Device src_device, size_t nbytes,
                StreamHandle stream) {
  if (nbytes == 0) return;
  if (dst_device.is_cpu() && src_device.is_cpu()) {
    cpu_backend().copy(dst, dst_device, src, src_device, nbytes, stream);
    return;
  }
  DeviceBackend& b = backend_for(dst_device.is_cpu() ? src_device : dst_device, "copy");
  if (!dst_device.is_cpu() && !src_device.is_cpu() && dst_device.type != src_device.type)
    fail(CH_ERR_DEVICE, "copy: from ", src_device.to_string(), " to ", dst_device.to_string(),
         " is not supported");
  if (!src_device.is_cpu() && src_device != dst_device) backend_for(src_device, "copy");
  b.copy(dst, dst_device, src, src_device, nbytes, stream);
}

}  // namespace chainerc
