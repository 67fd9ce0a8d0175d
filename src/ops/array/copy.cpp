// copy: a copy of x on the device `dst` (Chainer's F.copy). Only the CPU
// exists in this build: copying to a CUDA device is CH_ERR_UNSUPPORTED.
// Backward copies gy back to x's device. Any dtype.
#include "ops/op_util.h"
#include "ops/ops.h"

namespace chainerc::ops {
namespace {

class Copy final : public Function {
 public:
  explicit Copy(Device dst) : dst_(dst) {}
  const char* name() const override { return "Copy"; }
  Arrays forward(const Arrays& in) override {
    cpu::require_cpu(in[0], "copy");
    if (!dst_.is_cpu()) fail(CH_ERR_UNSUPPORTED, "copy: cannot copy to ", dst_.to_string());
    return {in[0].copy()};
  }
  Arrays backward(const Arrays&, const Arrays& gy) override { return {gy[0].copy()}; }

 private:
  Device dst_;
};

}  // namespace

VarPtr copy(const VarPtr& x, Device dst) {
  if (dst.type != CH_DEVICE_CPU && dst.type != CH_DEVICE_CUDA)
    fail(CH_ERR_DEVICE, "copy: device type ", dst.type, " is not a device type (CH_DEVICE_CPU ",
         CH_DEVICE_CPU, " or CH_DEVICE_CUDA ", CH_DEVICE_CUDA, ")");
  if (dst.index < 0) fail(CH_ERR_DEVICE, "copy: device index ", dst.index, " is negative");
  if (dst.type == CH_DEVICE_CUDA)
    fail(CH_ERR_UNSUPPORTED, "copy: cannot copy to ", dst.to_string(),
         ": this build of chainerc has no CUDA backend");
  if (dst.index != 0)
    fail(CH_ERR_DEVICE, "copy: CPU device index ", dst.index,
         " does not exist (the CPU is index 0)");
  return apply1(std::make_shared<Copy>(dst), {x});
}

}  // namespace chainerc::ops
