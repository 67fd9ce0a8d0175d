// CPU kernels of Adam's updates: pointwise::AdamRule (Chainer 1.0.1), AdamWRule and
// AmsgradRule (Chainer 7) over the elements (update_loop.h).
#include "backend/cpu/kernel_list.h"
#include "backend/cpu/ops/optimizers/update_loop.h"
#include "kernels/optimizers.h"

namespace chainerc::cpu {
namespace {

void adam_update_kernel(const kernels::AdamHyper& hp, Array& param, const Array& grad, Array& m,
                        Array& v) {
  update_loop<pointwise::AdamRule>(hp, param, grad, m, v);
}

void adamw_update_kernel(const kernels::AdamWHyper& hp, Array& param, const Array& grad, Array& m,
                         Array& v) {
  update_loop<pointwise::AdamWRule>(hp, param, grad, m, v);
}

void amsgrad_update_kernel(const kernels::AdamWHyper& hp, Array& param, const Array& grad, Array& m,
                           Array& v, Array& vhat) {
  update_loop<pointwise::AmsgradRule>(hp, param, grad, m, v, vhat);
}

}  // namespace

void register_adam_kernels() {
  kernels::adam_update.set(CH_DEVICE_CPU, adam_update_kernel);
  kernels::adamw_update.set(CH_DEVICE_CPU, adamw_update_kernel);
  kernels::amsgrad_update.set(CH_DEVICE_CPU, amsgrad_update_kernel);
}

}  // namespace chainerc::cpu
