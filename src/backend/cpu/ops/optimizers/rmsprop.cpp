// CPU kernel of RMSprop's update: pointwise::RmspropRule over the elements (update_loop.h).
#include "backend/cpu/kernel_list.h"
#include "backend/cpu/ops/optimizers/update_loop.h"
#include "kernels/optimizers.h"

namespace chainerc::cpu {
namespace {

void rmsprop_update_kernel(const kernels::RmspropHyper& hp, Array& param, const Array& grad,
                           Array& ms) {
  update_loop<pointwise::RmspropRule>(hp, param, grad, ms);
}

}  // namespace

void register_rmsprop_kernels() {
  kernels::rmsprop_update.set(CH_DEVICE_CPU, rmsprop_update_kernel);
}

}  // namespace chainerc::cpu
