// CUDA kernel of the label check shared by the losses and accuracy: the
// first label outside [0, n_classes), found by an atomicMin over the labels.
#include "cuda/ops/kernel_list.h"
#include "cuda/ops/rows.cuh"
#include "kernels/loss.h"

namespace chainerc::cuda {
namespace {

kernels::BadLabel find_bad_label_kernel(const Array& t, int64_t n_classes) {
  const int64_t i = first_out_of_range(t, n_classes, "find_bad_label");
  if (i < 0) return {};
  return {i, static_cast<int64_t>(t.get(i))};
}

}  // namespace

void register_label_kernels() {
  kernels::find_bad_label.set(CH_DEVICE_CUDA, find_bad_label_kernel);
}

}  // namespace chainerc::cuda
