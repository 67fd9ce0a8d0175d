// CPU kernel of Adam's update: pointwise::AdamRule over the elements (update_loop.h).
#include "backend/cpu/kernel_list.h"
#include "backend/cpu/ops/optimizers/update_loop.h"
#include "kernels/optimizers.h"

namespace chainerc::cpu {
namespace {

void adam_update_kernel(const kernels::AdamHyper& hp, Array& param, const Array& grad, Array& m,
                        Array& v) {
  update_loop<pointwise::AdamRule>(hp, param, grad, m, v);
}

}  // namespace

void register_adam_kernels() { kernels::adam_update.set(CH_DEVICE_CPU, adam_update_kernel); }

}  // namespace chainerc::cpu
