// Kernels of the loss functions (ops/loss) and the label check they share
// with accuracy (ops/evaluation). Arguments (shapes, dtypes, devices) are
// checked by the op; outputs are allocated by the op on the inputs' device.
// A loss is a 0-d array of the scores' dtype; its gradient arrives as the
// 0-d `gloss` and is read by the kernel.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "kernels/registry.h"

namespace chainerc::kernels {

// A label that fails a check: its position in t and its value; index -1 when
// every label passed.
struct BadLabel {
  int64_t index = -1;
  int64_t value = 0;
};
// The first of the int32 labels t outside [0, n_classes).
inline Kernel<BadLabel(const Array& t, int64_t n_classes)> find_bad_label{"find_bad_label"};

// find_bad_label's and embed_id_find_invalid's check without waiting for the
// device (issue 46): the first flat index of the int32 ids outside
// [0, limit) is recorded on the device, and Error(CH_ERR_INVALID_ARGUMENT)
// with describe(index) as its message is thrown at the device's next
// synchronisation (a copy to the host, ch_cuda_synchronize), describe
// given the index and the id there (it must hold no array: it lives until the
// report). On CUDA (cuda/runtime/deferred_errors.h); elsewhere the ops check
// at once. The kernels that read ids must then be safe for any id (they skip
// bad ones).
using DescribeBadIndex = std::function<std::string(int64_t index, int64_t value)>;
inline Kernel<void(const Array& ids, int64_t limit, const DescribeBadIndex& describe)>
    defer_out_of_range_check{"defer_out_of_range_check"};

// softmax_cross_entropy for scores x (N, C) and int32 labels t (N,) in
// [0, C): prob = softmax(x) along axis 1 (N, C), and loss = the mean over the
// rows of -log prob[i, t[i]], as log-sum-exp with the row maximum subtracted.
inline Kernel<void(const Array& x, const Array& t, Array& prob, Array& loss)> softmax_cross_entropy{
    "softmax_cross_entropy"};
// gx = (prob - onehot(t)) * gloss / N, of prob's shape.
inline Kernel<void(const Array& prob, const Array& t, const Array& gloss, Array& gx)>
    softmax_cross_entropy_grad{"softmax_cross_entropy_grad"};

// mean_squared_error for same-shaped x0, x1: diff = x0 - x1 (x0's shape) and
// loss = sum(diff^2) / size, summed in fixed blocks so that it does not depend
// on the thread count.
inline Kernel<void(const Array& x0, const Array& x1, Array& diff, Array& loss)> mean_squared_error{
    "mean_squared_error"};
// g0 = 2 diff gloss / size and g1 = -g0 (diff's shape).
inline Kernel<void(const Array& diff, const Array& gloss, Array& g0, Array& g1)>
    mean_squared_error_grad{"mean_squared_error_grad"};

// The paths of a binary hierarchical softmax's tree, per word: the internal
// nodes from the root (rows of W) and the directions (+1 left, -1 right).
// Host tables built once by the op from the tree.
struct HsmPaths {
  std::vector<int64_t> start;  // per word id: offset into nodes/codes, -1 if not a leaf
  std::vector<int64_t> length;
  std::vector<int32_t> nodes;
  std::vector<int8_t> codes;
  int64_t max_length = 0;
  // The tables as a device backend keeps them, per device index: copied to a
  // device once per tree, not at every call (cuda/ops/loss/
  // hierarchical_softmax.cu). Shared by copies of these paths, which must
  // not change once a kernel has run on them.
  struct DeviceTables {
    std::mutex mutex;
    std::map<int32_t, std::shared_ptr<void>> by_device;
  };
  std::shared_ptr<DeviceTables> device_tables = std::make_shared<DeviceTables>();
};
// The first of the int32 labels t that is not a word (leaf) of the tree.
inline Kernel<BadLabel(const Array& t, const HsmPaths& paths)> hsm_find_bad_label{
    "hsm_find_bad_label"};
// The same check without waiting (as defer_out_of_range_check): on CUDA.
inline Kernel<void(const Array& t, const HsmPaths& paths, const DescribeBadIndex& describe)>
    hsm_defer_bad_label{"hsm_defer_bad_label"};
// y (0-d) = sum over the batch of sum_k log(1 + exp(-b_k W[e_k] . x[s])) along
// the path of word t[s]; x (N, D), W (n_internal, D), t (N,) int32 leaves.
inline Kernel<void(const Array& x, const Array& t, const Array& W, const HsmPaths& paths, Array& y)>
    hsm{"hsm"};
// gx += the gradient for x (gx allocated zeroed by the op, x's shape) and
// gW += the gradient for W (accumulated in place), for the loss gradient gloss.
inline Kernel<void(const Array& x, const Array& t, const Array& W, const HsmPaths& paths,
                   const Array& gloss, Array& gx, Array& gW)>
    hsm_grad{"hsm_grad"};

}  // namespace chainerc::kernels
