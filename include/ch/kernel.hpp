// chainerc's C++ API: ch::ElementwiseKernel and
// ch::ReductionKernel, user kernels from source strings (over <ch/kernel.h>).
// Part of <ch/ch.hpp>, which says what the C++ layer adds, how exceptions and
// callbacks behave and the threading contract; header-only.
#ifndef CH_KERNEL_HPP
#define CH_KERNEL_HPP

#include <ch/array.hpp>

namespace ch {
// ===========================================================================================
// User kernels from source strings
// ===========================================================================================

namespace detail {
// Run a kernel call on output slots (invalid entries = allocate) and collect every output:
// given ones shared, allocated ones adopted.
template <class F>
std::vector<Array> call_with_outputs(size_t n_out, const std::vector<Array>& given, F&& call) {
  if (!given.empty() && given.size() != n_out)
    fail(CH_ERR_INVALID_ARGUMENT, "kernel call: " + std::to_string(given.size()) +
                                      " output slots given for " + std::to_string(n_out) +
                                      " outputs");
  std::vector<ch_array*> slots(n_out, nullptr);
  for (size_t j = 0; j < given.size(); ++j) slots[j] = given[j].get();
  check(call(slots.data(), slots.size()));
  std::vector<Array> out;
  out.reserve(n_out);
  for (size_t j = 0; j < n_out; ++j)
    out.push_back(j < given.size() && given[j] ? given[j] : Array::adopt(slots[j]));
  return out;
}
}  // namespace detail

/// A user elementwise kernel (ch_elementwise_kernel; the seed's cuda.elementwise), e.g.
/// `ElementwiseKernel("T x, T y, T z", "T w", "w = x * y + z", "muladd")`. Runs on the
/// arguments' device; see <ch/kernel.h> for the parameter syntax and the caches. A handle:
/// copies refer to the same kernel; calls are thread-safe.
class ElementwiseKernel : public detail::Handle<ch_elementwise_kernel, ch_elementwise_kernel_retain,
                                                ch_elementwise_kernel_release> {
 public:
  ElementwiseKernel() noexcept = default;
  ElementwiseKernel(const std::string& in_params, const std::string& out_params,
                    const std::string& operation, const std::string& name = "kernel") {
    ch_elementwise_kernel* out = nullptr;
    check(ch_elementwise_kernel_new(&out, in_params.c_str(), out_params.c_str(), operation.c_str(),
                                    name.c_str()));
    reset(out);
  }
  /// Run with every output allocated; returns the outputs in order.
  std::vector<Array> operator()(const std::vector<Array>& inputs) const { return call(inputs, {}); }
  /// Run writing into `outputs` (one per output parameter; invalid entries are allocated, an
  /// empty vector allocates all); returns every output.
  std::vector<Array> call(const std::vector<Array>& inputs,
                          const std::vector<Array>& outputs) const {
    std::vector<ch_array*> xs = detail::handles_of(inputs);
    return detail::call_with_outputs(outputs.empty() ? output_count() : outputs.size(), outputs,
                                     [&](ch_array** slots, size_t n) {
                                       return ch_elementwise_kernel_call(get(), xs.data(),
                                                                         xs.size(), slots, n);
                                     });
  }
  /// Number of output parameters (the size of what the call operators return).
  size_t output_count() const noexcept { return ch_elementwise_kernel_output_count(get()); }
};

/// A user reduction kernel (ch_reduction_kernel; the seed's cuda.reduce, CuPy's
/// ReductionKernel), e.g. sum of squares:
/// `ReductionKernel("T x", "T y", "x * x", "a + b", "y = a", "0", "sum_sq")`.
class ReductionKernel : public detail::Handle<ch_reduction_kernel, ch_reduction_kernel_retain,
                                              ch_reduction_kernel_release> {
 public:
  ReductionKernel() noexcept = default;
  ReductionKernel(const std::string& in_params, const std::string& out_params,
                  const std::string& map_expr, const std::string& reduce_expr,
                  const std::string& post_map_expr, const std::string& identity,
                  const std::string& name = "reduce_kernel", const std::string& reduce_type = "") {
    ch_reduction_kernel* out = nullptr;
    check(ch_reduction_kernel_new(&out, in_params.c_str(), out_params.c_str(), map_expr.c_str(),
                                  reduce_expr.c_str(), post_map_expr.c_str(), identity.c_str(),
                                  name.c_str(), reduce_type.c_str()));
    reset(out);
  }
  /// Reduce over every axis; returns the outputs.
  std::vector<Array> operator()(const std::vector<Array>& inputs) const {
    return run(inputs, nullptr, CH_REDUCE_ALL_AXES, false, {});
  }
  /// Reduce over `axes` (negative ones count from the end); outputs as in
  /// ElementwiseKernel::call.
  std::vector<Array> call(const std::vector<Array>& inputs, const std::vector<int32_t>& axes,
                          bool keepdims = false, const std::vector<Array>& outputs = {}) const {
    return run(inputs, axes.data(), static_cast<int32_t>(axes.size()), keepdims, outputs);
  }
  /// Number of output parameters (the size of what the call operators return).
  size_t output_count() const noexcept { return ch_reduction_kernel_output_count(get()); }

 private:
  std::vector<Array> run(const std::vector<Array>& inputs, const int32_t* axes, int32_t n_axes,
                         bool keepdims, const std::vector<Array>& outputs) const {
    std::vector<ch_array*> xs = detail::handles_of(inputs);
    return detail::call_with_outputs(outputs.empty() ? output_count() : outputs.size(), outputs,
                                     [&](ch_array** slots, size_t n) {
                                       return ch_reduction_kernel_call(get(), xs.data(), xs.size(),
                                                                       slots, n, axes, n_axes,
                                                                       keepdims ? 1 : 0);
                                     });
  }
};

}  // namespace ch

#endif  // CH_KERNEL_HPP
