// Variables and function nodes: the define-by-run graph.
//
// Ownership: an output variable holds its creator strongly; a function node
// holds its inputs strongly and its outputs weakly, so the graph lives exactly
// as long as some output variable and has no cycles. Destruction of long
// chains is made iterative by deferring creators (see variable.cpp).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "array.h"

namespace chainerc {

class Function;
struct VariableImpl;
using VarPtr = std::shared_ptr<VariableImpl>;
using FuncPtr = std::shared_ptr<Function>;
using Arrays = std::vector<Array>;

struct VariableImpl {
  explicit VariableImpl(Array d, bool vol = false) : data(std::move(d)), is_volatile(vol) {}
  ~VariableImpl();
  VariableImpl(const VariableImpl&) = delete;
  VariableImpl& operator=(const VariableImpl&) = delete;

  Array data;
  Array grad;  // undefined = None
  // The gradient as a variable, set by a double-backprop pass (Chainer's
  // grad_var); its data is `grad`. It holds the gradient's graph, which may
  // reference this variable: clearing the grad (set_grad NULL, a later
  // backward) breaks that cycle. Read it through grad_variable().
  std::shared_ptr<VariableImpl> grad_var;
  FuncPtr creator;   // null for a root
  int64_t rank = 0;  // creator's rank + 1; orders backward
  bool is_volatile = false;
  // Whether backward computes a gradient for this variable (Chainer v2's
  // requires_grad). Outputs of a function require one when any input does.
  bool requires_grad = true;
  // Backward bookkeeping: the pass that last wrote grad, and whether grad is a
  // buffer that pass allocated itself (so further gradients may be added in place).
  uint64_t grad_epoch = 0;
  bool grad_owned = false;

  // Data release (Chainer v2's retained inputs): when the last C handle to a
  // variable made by a function goes, nothing but its consumers (recorded
  // functions that take it as input) refers to it, and none of them reads
  // its data in backward, the variable keeps only the data's dtype, shape
  // and device (data becomes a placeholder without memory). Intermediate
  // arrays such as a convolution's output before pooling are so freed during
  // forward, as in Chainer v2 and PyTorch. Anything else holding the variable
  // (another handle, code inside chainerc) keeps the data; roots and
  // unconsumed outputs are never released.
  std::atomic<bool> made_by_function{false};  // set once a creator is recorded
  // Consumers (low 32 bits) and, of those, the ones whose backward reads the
  // data (high 32 bits): one word, so that recording or destroying a node
  // costs one atomic add per input.
  std::atomic<uint64_t> consumer_counts{0};
  bool data_released = false;  // guarded by variable_release_mutex()
  // Set (under variable_release_mutex()) once ch_variable_set_data replaced
  // the data by other data: until then the data (or its placeholder) has
  // the dtype, shape and device forward saw, and backward need not take the
  // lock to check it.
  std::atomic<bool> data_replaced{false};
};

// Serialises releasing a variable's data with handing out new handles to
// variables found through the graph (ch_function_input / ch_function_output),
// so that a variable is never released while a new handle to it is made.
std::mutex& variable_release_mutex();
// Called when a C handle to a variable is destroyed; `doomed` is the handle's
// reference, still held. Releases the data as described at VariableImpl.
void variable_handle_destroyed(const std::shared_ptr<void>& doomed) noexcept;

struct OutputInfo {
  DType dtype;
  Shape shape;
  Device device;
};

// A learnable parameter of a function object with its gradient array (the
// seed's parameter_names / gradient_names). Shared by every application.
struct Parameter {
  std::string name;
  Array param, grad;
};
using Parameters = std::vector<Parameter>;

// A function application: a node of the graph. Built-in functions and
// user callbacks derive from it. One object is one application (Chainer's
// copy on call happens before apply).
class Function {
 public:
  virtual ~Function();
  Function() = default;
  Function(const Function&) = delete;
  Function& operator=(const Function&) = delete;

  virtual const char* name() const = 0;
  // Computes outputs. Checks dtypes/shapes (Error naming the function and the
  // values) and keeps in members what backward needs.
  virtual Arrays forward(const Arrays& inputs) = 0;
  // One gradient per input; an undefined Array means none. grad_outputs has
  // one defined array per output (zeros where no gradient flowed). A
  // gradient that nothing else references (Array::unshared) is this call's
  // to overwrite, as the last thing it does (after a throw the engine gives
  // it back to the output's variable).
  virtual Arrays backward(const Arrays& inputs, const Arrays& grad_outputs) = 0;
  // Backward as a composition of differentiable functions, for double
  // backprop (gradients of gradients). gy: one variable per output (a
  // constant of zeros where no gradient flowed); returns one variable (or
  // null for none) per input, built with ops:: functions on `inputs`, on
  // output_variable(self, i, ...) and on constants. `self` is this node. The
  // engine calls it only when asked for double backprop, or from ch_grad
  // with recording off; the array backward above stays the fast path.
  // Parameter gradients go where the array backward puts them (see
  // parameter_grads_enabled). Functions without one answer false to
  // has_graph_backward and double backprop through them is CH_ERR_GRAPH.
  virtual bool has_graph_backward() const { return false; }
  virtual std::vector<std::shared_ptr<VariableImpl>> backward_graph(
      const std::shared_ptr<Function>& self, const std::vector<std::shared_ptr<VariableImpl>>& gy);
  // A fresh, unapplied copy for applying this function again, or null if the
  // function cannot be re-applied (built-ins are applied through their own call).
  virtual FuncPtr clone() const { return nullptr; }
  // Whether backward reads the data of input i (Chainer v2's retain_inputs).
  // A function that answers false may find, in backward, a placeholder for
  // input i that has its dtype, shape and device but no memory (the data was
  // released, see VariableImpl): it must use nothing else of it.
  virtual bool retains_input(size_t) const { return true; }
  // Whether forward reads its inputs' data (false for nodes that return
  // kept arrays, such as the softmax a graph backward makes from kept
  // probabilities): such a node may be applied to a variable whose data was
  // released.
  virtual bool reads_input_data() const { return true; }
  // Whether the inputs and parameters may be on different devices (copy,
  // and user functions, which see every array's device). Other functions
  // run their kernels on one device: apply_function refuses a mix with
  // CH_ERR_DEVICE before forward; a device without a function's kernels is
  // refused by the kernel registry, also with CH_ERR_DEVICE.
  virtual bool spans_devices() const { return false; }

  // Graph links, set by apply_function().
  std::vector<VarPtr> inputs;
  // The input data forward computed from, or for an input whose data
  // backward does not read, a placeholder with its dtype, shape and device.
  // Backward uses the inputs' current data (ch_variable_set_data may replace
  // it) but refuses a replacement of another shape or dtype, which the
  // function's kernels were not sized for.
  Arrays forward_inputs;
  // Bit i: input i counts this node among its data-reading consumers (inputs
  // past 63 always do). Every input of a recorded node counts it as a
  // consumer until the node is destroyed or unchained.
  uint64_t retained_mask = 0;
  bool counted_as_consumer = false;
  bool retains_data_of(size_t i) const { return i >= 64 || ((retained_mask >> i) & 1) != 0; }
  std::vector<std::weak_ptr<VariableImpl>> outputs;
  std::vector<OutputInfo> output_info;
  int64_t rank = 0;
  uint64_t visit_epoch = 0;  // backward pass that last queued this node
  bool applied = false;
  // Set by the engine before backward: bit i is set when input i needs a
  // gradient (inputs past 63 always read as needing one). A function may
  // skip computing (and return none for) the gradients of the others.
  uint64_t input_grad_mask = ~uint64_t{0};
  bool needs_input_grad(size_t i) const { return i >= 64 || ((input_grad_mask >> i) & 1) != 0; }

  // Parameters shared by all applications of one function object (null if none).
  std::shared_ptr<Parameters> parameters;
  bool has_parameters() const { return parameters && !parameters->empty(); }

  // Drop the links to the inputs (each becomes null, the count stays) and the
  // outputs' creator links (the seed's Function.unchain).
  void unchain();
};

// Every input in `in` and every parameter of f on one device; Error
// (CH_ERR_DEVICE) naming the first that differs otherwise. apply_function
// checks this unless f->spans_devices().
void require_one_device(const Function& f, const Arrays& in);

// Run forward and, unless inputs are volatile, record the node in the graph.
// Mixing volatile and non-volatile inputs is Error(CH_ERR_GRAPH).
std::vector<VarPtr> apply_function(const FuncPtr& f, std::vector<VarPtr> inputs);
VarPtr apply1(const FuncPtr& f, std::vector<VarPtr> inputs);

// Error backpropagation from `v` (see ch_variable_backward).
void backward(const VarPtr& v, bool retain_grad);

// A fresh backward-pass number (never 0, which marks a grad the user set).
uint64_t next_backward_epoch() noexcept;

// Options of the general engine (graph_backward.cpp).
struct BackwardOptions {
  bool retain_grad = false;
  bool enable_double_backprop = false;
};
// ch_variable_backward_ex: as backward(), with gradients as variables
// (grad_var) built as graphs when options.enable_double_backprop.
void backward_ex(const VarPtr& v, const BackwardOptions& options);
// Chainer's chainer.grad: gradients of `outputs` (seeded with grad_outputs,
// null entries or an empty list meaning ones for one-element outputs, else the
// output's grad) with respect to `inputs`, as new variables (null where no
// gradient reaches an input). No grad field and no parameter gradient is
// touched, except intermediates' grads when options.retain_grad.
std::vector<VarPtr> grad(const std::vector<VarPtr>& outputs, const std::vector<VarPtr>& inputs,
                         const std::vector<VarPtr>& grad_outputs, const BackwardOptions& options);
// The gradient of v as a variable: grad_var when it still holds grad, else
// a new root holding grad (null when there is none).
VarPtr grad_variable(const VarPtr& v);
// A constant: a root that requires no gradient.
VarPtr constant_variable(const Array& a);
// Output i of node `self` as a variable, for backward_graph: the live output
// variable, or, where it was freed, a new one with `data` (the array the
// node kept) and `self` as creator, so that gradients through it flow back
// into this node.
VarPtr output_variable(const FuncPtr& self, size_t i, const Array& data);
// Whether backward adds into function parameters' gradients on this thread
// (false inside ch_grad, which leaves every gradient field untouched).
bool parameter_grads_enabled() noexcept;
void unchain_backward(const VarPtr& v);

// Destroy a node later, from a loop instead of recursion.
void defer_destroy(FuncPtr&& f) noexcept;

}  // namespace chainerc
