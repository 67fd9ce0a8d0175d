// Helpers for the user-kernel tests: RAII kernel handles and calls that
// return their outputs as owned arrays.
#pragma once

#include <ch/ch.h>

#include <cmath>
#include <vector>

#include "../capi/capi_test_util.h"

namespace kernel_test {

using capi_test::Arr;
using EKernel = capi_test::Ref<ch_elementwise_kernel, ch_elementwise_kernel_release>;
using RKernel = capi_test::Ref<ch_reduction_kernel, ch_reduction_kernel_release>;

// Deterministic test values: v[k] = scale * sin(k + phase) (no RNG needed).
inline std::vector<double> wave(size_t n, double phase, double scale = 1.0) {
  std::vector<double> v(n);
  for (size_t k = 0; k < n; ++k) v[k] = scale * std::sin(static_cast<double>(k) + phase);
  return v;
}

// Calls with every output allocated; returns the status and fills `outs`.
inline ch_status call(const ch_elementwise_kernel* k, std::vector<ch_array*> in,
                      std::vector<Arr>& outs, size_t n_out) {
  std::vector<ch_array*> o(n_out, nullptr);
  ch_status st = ch_elementwise_kernel_call(k, in.data(), in.size(), o.data(), o.size());
  outs.clear();
  for (ch_array* h : o) outs.emplace_back(h);
  return st;
}

inline ch_status reduce(const ch_reduction_kernel* k, std::vector<ch_array*> in,
                        std::vector<Arr>& outs, size_t n_out, const std::vector<int32_t>* axes,
                        bool keepdims = false) {
  std::vector<ch_array*> o(n_out, nullptr);
  ch_status st = ch_reduction_kernel_call(
      k, in.data(), in.size(), o.data(), o.size(), axes ? axes->data() : nullptr,
      axes ? static_cast<int32_t>(axes->size()) : CH_REDUCE_ALL_AXES, keepdims);
  outs.clear();
  for (ch_array* h : o) outs.emplace_back(h);
  return st;
}

}  // namespace kernel_test
