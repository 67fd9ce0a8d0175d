// The label check of softmax_cross_entropy and accuracy: every int32 label
// of t in [0, n_classes), else Error(CH_ERR_INVALID_ARGUMENT) naming the
// function, the first bad position and its value. Where the device can
// report later (CUDA: kernels::defer_out_of_range_check) the check runs on
// the device and its error is thrown at the next synchronisation, so that a
// training step does not wait for the device; on the CPU at once.
#pragma once

#include <sstream>
#include <string>

#include "core/array.h"
#include "core/error.h"
#include "kernels/loss.h"

namespace chainerc::ops {

inline std::string bad_label_message(const std::string& who, int64_t index, int64_t value,
                                     int64_t n_classes) {
  std::ostringstream os;
  os << who << ": label t[" << index << "] = " << value << " is out of range [0, " << n_classes
     << ")";
  return os.str();
}

inline void check_labels(const char* who, const Array& t, int64_t n_classes) {
  if (kernels::defer_out_of_range_check.implemented_for(t.device().type)) {
    const std::string w = who;
    kernels::defer_out_of_range_check(t, n_classes, [n_classes, w](int64_t i, int64_t value) {
      return bad_label_message(w, i, value, n_classes);
    });
    return;
  }
  const kernels::BadLabel bad = kernels::find_bad_label(t, n_classes);
  if (bad.index >= 0)
    fail(CH_ERR_INVALID_ARGUMENT, bad_label_message(who, bad.index, bad.value, n_classes));
}

}  // namespace chainerc::ops
