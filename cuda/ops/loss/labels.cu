// CUDA kernel of the label check shared by the losses and accuracy: the
// first label outside [0, n_classes), found by an atomicMin over the labels;
// read back at once (find_bad_label) or at the next synchronisation
// (defer_out_of_range_check, which the ops use on CUDA).
#include "cuda/ops/kernel_list.h"
#include "cuda/ops/rows.cuh"
#include "cuda/runtime/deferred_errors.h"
#include "kernels/loss.h"

namespace chainerc::cuda {
namespace {

kernels::BadLabel find_bad_label_kernel(const Array& t, int64_t n_classes) {
  const int64_t i = first_out_of_range(t, n_classes, "find_bad_label");
  if (i < 0) return {};
  return {i, static_cast<int64_t>(t.get(i))};
}

// The id at the recorded index (words[1] = ids[words[0]]), while ids lives.
__global__ void fetch_bad_id_kernel(const int32_t* __restrict__ ids,
                                    unsigned long long* __restrict__ words) {
  if (words[0] != ~0ull) words[1] = static_cast<unsigned long long>(ids[words[0]]);
}

// The same search, its result read at the next synchronisation.
void defer_out_of_range_check(const Array& ids, int64_t limit,
                              const kernels::DescribeBadIndex& describe) {
  if (ids.size() == 0) return;
  DeviceGuard guard(ids.device().index);
  unsigned long long* words = deferred_check_slot(ids.device().index, describe);
  launch_elementwise("defer_out_of_range_check", ids.size(), first_out_of_range_kernel<int32_t>,
                     ids.data<int32_t>(), ids.size(), limit, words);
  check_launch(launch(fetch_bad_id_kernel, 1, 1, 0, nullptr, ids.data<int32_t>(), words),
               "defer_out_of_range_check");
}

}  // namespace

void register_label_kernels() {
  kernels::find_bad_label.set(CH_DEVICE_CUDA, find_bad_label_kernel);
  kernels::defer_out_of_range_check.set(CH_DEVICE_CUDA, defer_out_of_range_check);
}

}  // namespace chainerc::cuda
