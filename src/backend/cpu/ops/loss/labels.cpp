// CPU kernel of the label check shared by the losses and accuracy.
#include "backend/cpu/kernel_list.h"
#include "kernels/loss.h"

namespace chainerc::cpu {
namespace {

kernels::BadLabel find_bad_label_kernel(const Array& t, int64_t n_classes) {
  const int32_t* pt = t.data<int32_t>();
  for (int64_t i = 0, n = t.size(); i < n; ++i)
    if (pt[i] < 0 || pt[i] >= n_classes) return {i, pt[i]};
  return {};
}

}  // namespace

void register_label_kernels() { kernels::find_bad_label.set(CH_DEVICE_CPU, find_bad_label_kernel); }

}  // namespace chainerc::cpu
