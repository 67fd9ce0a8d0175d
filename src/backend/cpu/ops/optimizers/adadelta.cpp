// CPU kernel of AdaDelta's update: pointwise::AdaDeltaRule over the elements (update_loop.h).
#include "backend/cpu/kernel_list.h"
#include "backend/cpu/ops/optimizers/update_loop.h"
#include "kernels/optimizers.h"

namespace chainerc::cpu {
namespace {

void adadelta_update_kernel(const kernels::AdaDeltaHyper& hp, Array& param, const Array& grad,
                            Array& msg, Array& msdx) {
  update_loop<pointwise::AdaDeltaRule>(hp, param, grad, msg, msdx);
}

}  // namespace

void register_adadelta_kernels() {
  kernels::adadelta_update.set(CH_DEVICE_CPU, adadelta_update_kernel);
}

}  // namespace chainerc::cpu
