// copy: a copy of x on the device `dst` (Chainer's F.copy), between the CPU
// and CUDA devices in any direction. Backward copies gy back to x's device.
// Any dtype. A CUDA device that does not exist is CH_ERR_DEVICE.
#include "core/device_backend.h"
#include "ops/op_util.h"
#include "ops/ops.h"

namespace chainerc::ops {
namespace {

class Copy final : public Function {
 public:
  explicit Copy(Device dst) : dst_(dst) {}
  const char* name() const override { return "Copy"; }
  // The one built-in function that crosses devices.
  bool spans_devices() const override { return true; }
  Arrays forward(const Arrays& in) override {
    src_ = in[0].device();
    return {in[0].to_device(dst_)};
  }
  Arrays backward(const Arrays&, const Arrays& gy) override { return {gy[0].to_device(src_)}; }
  CH_GRAPH_BACKWARD { return {copy(gy[0], src_)}; }

 private:
  Device dst_;
  Device src_;
};

}  // namespace

VarPtr copy(const VarPtr& x, Device dst) {
  if (dst.type != CH_DEVICE_CPU && dst.type != CH_DEVICE_CUDA)
    fail(CH_ERR_DEVICE, "copy: device type ", dst.type, " is not a device type (CH_DEVICE_CPU ",
         CH_DEVICE_CPU, " or CH_DEVICE_CUDA ", CH_DEVICE_CUDA, ")");
  if (dst.index < 0) fail(CH_ERR_DEVICE, "copy: device index ", dst.index, " is negative");
  if (dst.type == CH_DEVICE_CUDA) {
    backend_for(dst, "copy");  // "no CUDA device: ..." unless it exists
    return apply1(std::make_shared<Copy>(dst), {x});
  }
  if (dst.index != 0)
    fail(CH_ERR_DEVICE, "copy: CPU device index ", dst.index,
         " does not exist (the CPU is index 0)");
  return apply1(std::make_shared<Copy>(dst), {x});
}

}  // namespace chainerc::ops
