// CPU kernel of SGD's update: pointwise::SgdRule over the elements (update_loop.h).
#include "backend/cpu/kernel_list.h"
#include "backend/cpu/ops/optimizers/update_loop.h"
#include "kernels/optimizers.h"

namespace chainerc::cpu {
namespace {

void sgd_update_kernel(const kernels::SgdHyper& hp, Array& param, const Array& grad) {
  update_loop<pointwise::SgdRule>(hp, param, grad);
}

}  // namespace

void register_sgd_kernels() { kernels::sgd_update.set(CH_DEVICE_CPU, sgd_update_kernel); }

}  // namespace chainerc::cpu
