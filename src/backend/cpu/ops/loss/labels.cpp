// CPU kernel of the label check shared by the losses and accuracy.
#include "backend/cpu/kernel_list.h"
#include "core/error.h"
#include "kernels/loss.h"

namespace chainerc::cpu {
namespace {

kernels::BadLabel find_bad_label_kernel(const Array& t, int64_t n_classes) {
  const int32_t* pt = t.data<int32_t>();
  for (int64_t i = 0, n = t.size(); i < n; ++i)
    if (pt[i] < 0 || pt[i] >= n_classes) return {i, pt[i]};
  return {};
}

// The CPU has nothing to wait for: the check's error is thrown at once.
void defer_out_of_range_check(const Array& ids, int64_t limit,
                              const kernels::DescribeBadIndex& describe) {
  const kernels::BadLabel bad = find_bad_label_kernel(ids, limit);
  if (bad.index >= 0) fail(CH_ERR_INVALID_ARGUMENT, describe(bad.index, bad.value));
}

}  // namespace

void register_label_kernels() {
  kernels::find_bad_label.set(CH_DEVICE_CPU, find_bad_label_kernel);
  kernels::defer_out_of_range_check.set(CH_DEVICE_CPU, defer_out_of_range_check);
}

}  // namespace chainerc::cpu
