#include "device_backend.h"

#include <cstring>

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

DeviceBackend& backend_for(Device device, const char* who) {
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

void require_cpu(const Device& d, const char* who, const char* what) {
  if (!d.is_cpu())
    fail(CH_ERR_DEVICE, who, ": ", what, " is on ", d.to_string(),
         "; this needs it on the CPU (copy it with ch_array_to_device first)");
}

}  // namespace chainerc

namespace chainerc {

void copy_bytes(void* dst, Device dst_device, const void* src, Device src_device, size_t nbytes,
                StreamHandle stream) {
  if (nbytes == 0) return;
  if (dst_device.is_cpu() && src_device.is_cpu()) {
    std::memcpy(dst, src, nbytes);
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
