// C API: ch_elementwise_kernel, ch_reduction_kernel (user kernels from source strings).
#include "api.h"
#include "user_kernels/cpu_jit.h"
#include "user_kernels/gpu.h"
#include "user_kernels/user_kernel.h"

using namespace chainerc;
using namespace chainerc::capi;
using chainerc::kernels::ElementwiseKernel;
using chainerc::kernels::ReductionKernel;

namespace {

std::string str_arg(const char* s, const char* who, const char* arg, bool required) {
  if (!s) {
    if (required) fail(CH_ERR_INVALID_ARGUMENT, who, ": ", arg, " is NULL");
    return std::string();
  }
  return s;
}

std::vector<Array> input_arrays(ch_array* const* inputs, size_t n, const char* who) {
  if (n && !inputs) fail(CH_ERR_INVALID_ARGUMENT, who, ": inputs is NULL but n_inputs is ", n);
  std::vector<Array> v;
  v.reserve(n);
  for (size_t j = 0; j < n; ++j) {
    const std::string arg = "inputs[" + std::to_string(j) + "]";
    v.push_back(array_of(inputs[j], who, arg.c_str()));
  }
  return v;
}

std::vector<Array> given_outputs(ch_array** outputs, size_t n, const char* who) {
  if (!outputs) fail(CH_ERR_INVALID_ARGUMENT, who, ": outputs is NULL (pass n_outputs slots)");
  std::vector<Array> v(n);
  for (size_t j = 0; j < n; ++j) {
    const std::string arg = "outputs[" + std::to_string(j) + "]";
    if (outputs[j]) v[j] = mutable_array_of(outputs[j], who, arg.c_str());
  }
  return v;
}

// The caller's slots must match the kernel's outputs exactly (they are written to).
void check_output_count(const std::string& name, size_t expected, size_t given, const char* who) {
  if (given != expected)
    fail(CH_ERR_INVALID_ARGUMENT, who, ": kernel '", name, "' has ", expected,
         " output(s) but n_outputs is ", given);
}

void hand_out(ch_array** outputs, std::vector<Array>& result) {
  // Create every handle first so that a failure leaves the NULL slots NULL.
  std::vector<ch_array*> fresh(result.size(), nullptr);
  try {
    for (size_t j = 0; j < result.size(); ++j)
      if (!outputs[j]) fresh[j] = new_array_handle(result[j]);
  } catch (...) {
    for (ch_array* h : fresh)
      if (h) ch_array_release(h);
    throw;
  }
  for (size_t j = 0; j < result.size(); ++j)
    if (!outputs[j]) outputs[j] = fresh[j];
}

}  // namespace

extern "C" {

ch_status ch_elementwise_kernel_new(ch_elementwise_kernel** out, const char* in_params,
                                    const char* out_params, const char* operation,
                                    const char* name) {
  CH_API_BEGIN
  require_out(out, __func__);
  auto k = std::make_shared<ElementwiseKernel>(str_arg(in_params, __func__, "in_params", false),
                                               str_arg(out_params, __func__, "out_params", true),
                                               str_arg(operation, __func__, "operation", true),
                                               str_arg(name, __func__, "name", true));
  *out =
      static_cast<ch_elementwise_kernel*>(handle_new(HandleKind::ElementwiseKernel, std::move(k)));
  CH_API_END
}

ch_elementwise_kernel* ch_elementwise_kernel_retain(ch_elementwise_kernel* kernel) {
  return handle_retain(kernel, HandleKind::ElementwiseKernel) ? kernel : nullptr;
}

ch_status ch_elementwise_kernel_release(ch_elementwise_kernel* kernel) {
  CH_API_BEGIN
  handle_release(kernel, HandleKind::ElementwiseKernel, __func__);
  CH_API_END
}

ch_status ch_elementwise_kernel_call(const ch_elementwise_kernel* kernel, ch_array* const* inputs,
                                     size_t n_inputs, ch_array** outputs, size_t n_outputs) {
  CH_API_BEGIN
  auto k =
      handle_shared<ElementwiseKernel>(kernel, HandleKind::ElementwiseKernel, __func__, "kernel");
  check_output_count(k->name(), k->out().size(), n_outputs, __func__);
  std::vector<Array> in = input_arrays(inputs, n_inputs, __func__);
  std::vector<Array> result = k->call(in, given_outputs(outputs, n_outputs, __func__));
  hand_out(outputs, result);
  CH_API_END
}

ch_status ch_reduction_kernel_new(ch_reduction_kernel** out, const char* in_params,
                                  const char* out_params, const char* map_expr,
                                  const char* reduce_expr, const char* post_map_expr,
                                  const char* identity, const char* name, const char* reduce_type) {
  CH_API_BEGIN
  require_out(out, __func__);
  auto k = std::make_shared<ReductionKernel>(
      str_arg(in_params, __func__, "in_params", false),
      str_arg(out_params, __func__, "out_params", true),
      str_arg(map_expr, __func__, "map_expr", true),
      str_arg(reduce_expr, __func__, "reduce_expr", true),
      str_arg(post_map_expr, __func__, "post_map_expr", false),
      str_arg(identity, __func__, "identity", false), str_arg(name, __func__, "name", true),
      str_arg(reduce_type, __func__, "reduce_type", false));
  *out = static_cast<ch_reduction_kernel*>(handle_new(HandleKind::ReductionKernel, std::move(k)));
  CH_API_END
}

ch_reduction_kernel* ch_reduction_kernel_retain(ch_reduction_kernel* kernel) {
  return handle_retain(kernel, HandleKind::ReductionKernel) ? kernel : nullptr;
}

ch_status ch_reduction_kernel_release(ch_reduction_kernel* kernel) {
  CH_API_BEGIN
  handle_release(kernel, HandleKind::ReductionKernel, __func__);
  CH_API_END
}

ch_status ch_reduction_kernel_call(const ch_reduction_kernel* kernel, ch_array* const* inputs,
                                   size_t n_inputs, ch_array** outputs, size_t n_outputs,
                                   const int32_t* axes, int32_t n_axes, int32_t keepdims) {
  CH_API_BEGIN
  auto k = handle_shared<ReductionKernel>(kernel, HandleKind::ReductionKernel, __func__, "kernel");
  check_output_count(k->name(), k->out().size(), n_outputs, __func__);
  if (n_axes < CH_REDUCE_ALL_AXES || n_axes > CH_MAX_NDIM)
    fail(CH_ERR_INVALID_ARGUMENT, __func__, ": n_axes ", n_axes, " is out of range [0, ",
         CH_MAX_NDIM, "] (or CH_REDUCE_ALL_AXES)");
  if (n_axes > 0 && !axes)
    fail(CH_ERR_INVALID_ARGUMENT, __func__, ": axes is NULL but n_axes is ", n_axes);
  std::vector<int32_t> ax;
  if (n_axes > 0) ax.assign(axes, axes + n_axes);
  std::vector<Array> in = input_arrays(inputs, n_inputs, __func__);
  std::vector<Array> result = k->call(in, given_outputs(outputs, n_outputs, __func__), ax,
                                      n_axes == CH_REDUCE_ALL_AXES, keepdims != 0);
  hand_out(outputs, result);
  CH_API_END
}

size_t ch_elementwise_kernel_input_count(const ch_elementwise_kernel* kernel) {
  const std::shared_ptr<void>* p = handle_find(kernel, HandleKind::ElementwiseKernel);
  return p ? static_cast<const ElementwiseKernel*>(p->get())->in().size() : 0;
}
size_t ch_elementwise_kernel_output_count(const ch_elementwise_kernel* kernel) {
  const std::shared_ptr<void>* p = handle_find(kernel, HandleKind::ElementwiseKernel);
  return p ? static_cast<const ElementwiseKernel*>(p->get())->out().size() : 0;
}
size_t ch_reduction_kernel_input_count(const ch_reduction_kernel* kernel) {
  const std::shared_ptr<void>* p = handle_find(kernel, HandleKind::ReductionKernel);
  return p ? static_cast<const ReductionKernel*>(p->get())->in().size() : 0;
}
size_t ch_reduction_kernel_output_count(const ch_reduction_kernel* kernel) {
  const std::shared_ptr<void>* p = handle_find(kernel, HandleKind::ReductionKernel);
  return p ? static_cast<const ReductionKernel*>(p->get())->out().size() : 0;
}

int32_t ch_kernel_cpu_supported(void) { return kernels::cpu_jit::available() ? 1 : 0; }
int32_t ch_kernel_cuda_supported(void) { return kernels::gpu::built() ? 1 : 0; }

}  // extern "C"
