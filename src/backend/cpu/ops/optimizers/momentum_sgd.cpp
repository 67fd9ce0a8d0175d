// CPU kernels of MomentumSGD's and NesterovAG's updates: pointwise::MomentumSgdRule and
// NesterovAgRule over the elements (update_loop.h).
#include "backend/cpu/kernel_list.h"
#include "backend/cpu/ops/optimizers/update_loop.h"
#include "kernels/optimizers.h"

namespace chainerc::cpu {
namespace {

void momentum_sgd_update_kernel(const kernels::MomentumSgdHyper& hp, Array& param,
                                const Array& grad, Array& v) {
  update_loop<pointwise::MomentumSgdRule>(hp, param, grad, v);
}

void nesterov_ag_update_kernel(const kernels::NesterovAgHyper& hp, Array& param, const Array& grad,
                               Array& v) {
  update_loop<pointwise::NesterovAgRule>(hp, param, grad, v);
}

}  // namespace

void register_momentum_sgd_kernels() {
  kernels::momentum_sgd_update.set(CH_DEVICE_CPU, momentum_sgd_update_kernel);
  kernels::nesterov_ag_update.set(CH_DEVICE_CPU, nesterov_ag_update_kernel);
}

}  // namespace chainerc::cpu
