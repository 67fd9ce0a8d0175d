// CPU kernel of AdaGrad's update: pointwise::AdaGradRule over the elements (update_loop.h).
#include "backend/cpu/kernel_list.h"
#include "backend/cpu/ops/optimizers/update_loop.h"
#include "kernels/optimizers.h"

namespace chainerc::cpu {
namespace {

void adagrad_update_kernel(const kernels::AdaGradHyper& hp, Array& param, const Array& grad,
                           Array& h) {
  update_loop<pointwise::AdaGradRule>(hp, param, grad, h);
}

}  // namespace

void register_adagrad_kernels() {
  kernels::adagrad_update.set(CH_DEVICE_CPU, adagrad_update_kernel);
}

}  // namespace chainerc::cpu
