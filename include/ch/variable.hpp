// chainerc's C++ API: ch::Variable, the ch::Function handle,
// backprop modes (over <ch/variable.h> and <ch/function.h>).
// Part of <ch/ch.hpp>, which says what the C++ layer adds, how exceptions and
// callbacks behave and the threading contract; header-only.
#ifndef CH_VARIABLE_HPP
#define CH_VARIABLE_HPP

#include <ch/array.hpp>

namespace ch {
// ===========================================================================================
// Variable and Function handles
// ===========================================================================================

class Function;

/// A variable (ch_variable): an array with the history of the computation that made it.
/// A handle: copies refer to the same variable. May be empty (`if (v)` tells).
class Variable : public detail::Handle<ch_variable, ch_variable_retain, ch_variable_release> {
 public:
  /// An empty (invalid) variable.
  Variable() noexcept = default;
  /// A new root variable holding `data` (shared, not copied). A volatile variable records
  /// no history.
  explicit Variable(const Array& data, bool is_volatile = false) {
    ch_variable* out = nullptr;
    check(ch_variable_new(&out, data.get(), is_volatile ? 1 : 0));
    reset(out);
  }

  /// Take ownership of a C handle (a new reference).
  static Variable adopt(ch_variable* handle) noexcept { return Variable(handle, 0); }
  /// Share a borrowed C handle: retains it.
  static Variable borrow(ch_variable* handle) noexcept {
    return Variable(handle ? ch_variable_retain(handle) : nullptr, 0);
  }

  /// The data array (shared with the variable).
  Array data() const {
    ch_array* out = nullptr;
    check(ch_variable_data(&out, get()));
    return Array::adopt(out);
  }
  /// Replace the data array (shared, not copied).
  void set_data(const Array& data) { check(ch_variable_set_data(get(), data.get())); }
  /// The gradient, or an empty Array when there is none.
  Array grad() const {
    ch_array* out = nullptr;
    check(ch_variable_grad(&out, get()));
    return Array::adopt(out);
  }
  /// Set the gradient (same shape and dtype as the data); an empty Array clears it.
  void set_grad(const Array& grad) { check(ch_variable_set_grad(get(), grad.get())); }
  /// Clear the gradient.
  void clear_grad() { check(ch_variable_set_grad(get(), nullptr)); }
  /// The function application that created this variable; empty for a root.
  Function creator() const;
  /// The graph behind this variable as Graphviz DOT text (see ch::graph_dot).
  std::string graph_dot(const std::string& name = "") const;

  /// Back-propagate from this variable (its grad is the initial error; ones if it has none
  /// and one element). Unless retain_grad, intermediate gradients are freed once used.
  void backward(bool retain_grad = false) {
    check(ch_variable_backward(get(), retain_grad ? 1 : 0));
  }
  /// Back-propagate with options: enable_double_backprop builds the gradients as graphs
  /// (read them with grad_var() and differentiate them again).
  void backward(bool retain_grad, bool enable_double_backprop) {
    ch_backward_options o = CH_BACKWARD_OPTIONS_INIT;
    o.retain_grad = retain_grad ? 1 : 0;
    o.enable_double_backprop = enable_double_backprop ? 1 : 0;
    check(ch_variable_backward_ex(get(), &o));
  }
  /// The gradient as a variable (Chainer's grad_var); empty when there is none.
  Variable grad_var() const {
    ch_variable* out = nullptr;
    check(ch_variable_grad_var(&out, get()));
    return Variable(out, 0);
  }
  /// Cut the graph before this variable: it becomes a root (truncated BPTT).
  void unchain_backward() { check(ch_variable_unchain_backward(get())); }

  bool is_volatile() const noexcept { return ch_variable_is_volatile(get()) != 0; }
  /// Whether backward computes this variable's gradient (default true). Mark data false:
  /// the first layer then skips its input gradient.
  bool requires_grad() const noexcept { return ch_variable_requires_grad(get()) != 0; }
  void set_requires_grad(bool requires_grad) {
    check(ch_variable_set_requires_grad(get(), requires_grad ? 1 : 0));
  }
  /// Number of elements of the data.
  int64_t size() const noexcept { return ch_variable_size(get()); }
  /// Shape and dtype of the data.
  Shape shape() const { return data().shape(); }
  ch_dtype dtype() const { return data().dtype(); }

 private:
  Variable(ch_variable* adopted, int) noexcept : Handle(adopted) {}
};

/// Chainer's chainer.grad: gradients of `outputs` with respect to `inputs` as new variables
/// (empty where none reaches an input); no grad field changes. grad_outputs: empty, or one
/// per output (an empty Variable means the output's grad, or ones for one element).
inline std::vector<Variable> grad(const std::vector<Variable>& outputs,
                                  const std::vector<Variable>& inputs,
                                  const std::vector<Variable>& grad_outputs = {},
                                  bool enable_double_backprop = false, bool retain_grad = false) {
  std::vector<ch_variable*> ys, xs, gys, out(inputs.size(), nullptr);
  for (const Variable& y : outputs) ys.push_back(y.get());
  for (const Variable& x : inputs) xs.push_back(x.get());
  for (const Variable& g : grad_outputs) gys.push_back(g.get());
  if (!grad_outputs.empty() && grad_outputs.size() != outputs.size())
    detail::fail(CH_ERR_INVALID_ARGUMENT,
                 "ch::grad: " + std::to_string(outputs.size()) + " outputs but " +
                     std::to_string(grad_outputs.size()) + " grad_outputs");
  ch_backward_options o = CH_BACKWARD_OPTIONS_INIT;
  o.retain_grad = retain_grad ? 1 : 0;
  o.enable_double_backprop = enable_double_backprop ? 1 : 0;
  check(ch_grad(out.data(), ys.data(), ys.size(), xs.data(), xs.size(),
                gys.empty() ? nullptr : gys.data(), &o));
  std::vector<Variable> res;
  for (ch_variable* h : out) res.push_back(Variable::adopt(h));
  return res;
}

/// A scope in which functions record no graph on this thread (Chainer's no_backprop_mode);
/// BackpropMode(true) is force_backprop_mode.
class BackpropMode {
 public:
  explicit BackpropMode(bool enable) { check(ch_backprop_mode_push(enable ? 1 : 0)); }
  ~BackpropMode() { ch_backprop_mode_pop(); }
  BackpropMode(const BackpropMode&) = delete;
  BackpropMode& operator=(const BackpropMode&) = delete;
};
struct NoBackpropMode : BackpropMode {
  NoBackpropMode() : BackpropMode(false) {}
};

/// A parameter of a function object, with its gradient (both shared, not copied).
struct Parameter {
  std::string name;
  Array param;
  Array grad;
};

namespace detail {
// Outputs returned by one apply; more make CH_ERR_UNSUPPORTED (the C API cannot tell the
// count before the call, and outputs past the capacity are not returned).
inline constexpr size_t kMaxOutputs = 64;

inline std::vector<Variable> apply(ch_function* f, const std::vector<Variable>& inputs) {
  std::vector<ch_variable*> in;
  in.reserve(inputs.size());
  for (const Variable& v : inputs) in.push_back(v.get());
  std::array<ch_variable*, kMaxOutputs> out{};
  size_t n = 0;
  ch_status st = ch_function_apply(f, in.data(), in.size(), out.data(), out.size(), &n);
  // Adopt every returned handle before anything can throw (on failure there are none).
  std::array<Variable, kMaxOutputs> owned;
  for (size_t i = 0; i < out.size() && out[i]; ++i) owned[i] = Variable::adopt(out[i]);
  check(st);
  if (n > kMaxOutputs)
    fail(CH_ERR_UNSUPPORTED, std::string("function '") + ch_function_name(f) + "' produced " +
                                 std::to_string(n) + " outputs; ch.hpp returns at most " +
                                 std::to_string(kMaxOutputs));
  return std::vector<Variable>(std::make_move_iterator(owned.begin()),
                               std::make_move_iterator(owned.begin() + n));
}

template <class... V>
inline constexpr bool all_variables = (std::is_convertible_v<const V&, const Variable&> && ...);
}  // namespace detail

/// A function (ch_function): a function object (from ch::FunctionBase or the C API) or a
/// recorded application of one (a graph node, from Variable::creator()). A handle.
class Function : public detail::Handle<ch_function, ch_function_retain, ch_function_release> {
 public:
  /// An empty (invalid) function.
  Function() noexcept = default;
  /// Take ownership of a C handle (a new reference).
  static Function adopt(ch_function* handle) noexcept { return Function(handle); }
  /// Share a borrowed C handle: retains it.
  static Function borrow(ch_function* handle) noexcept {
    return Function(handle ? ch_function_retain(handle) : nullptr);
  }

  /// Name, e.g. "MulAdd" or a built-in's "Exp".
  std::string name() const { return ch_function_name(get()); }

  /// Apply to `inputs` (all volatile or none); every call is a new graph node. Returns all
  /// outputs.
  std::vector<Variable> apply(const std::vector<Variable>& inputs) const {
    return detail::apply(get(), inputs);
  }
  /// Apply to the inputs and return the only output (CH_ERR_INVALID_ARGUMENT if the function
  /// produced several: use apply()).
  template <class... V, class = std::enable_if_t<detail::all_variables<V...>>>
  Variable operator()(const V&... inputs) const {
    std::vector<Variable> out = apply({inputs...});
    if (out.size() != 1)
      detail::fail(CH_ERR_INVALID_ARGUMENT, "function '" + name() + "' produced " +
                                                std::to_string(out.size()) +
                                                " outputs; call apply() to get them all");
    return out[0];
  }

  /// Graph inspection of an application: inputs and outputs (empty Variables where unchained
  /// or freed).
  size_t input_count() const noexcept { return ch_function_input_count(get()); }
  size_t output_count() const noexcept { return ch_function_output_count(get()); }
  Variable input(size_t index) const {
    ch_variable* out = nullptr;
    check(ch_function_input(&out, get(), index));
    return Variable::adopt(out);
  }
  Variable output(size_t index) const {
    ch_variable* out = nullptr;
    check(ch_function_output(&out, get(), index));
    return Variable::adopt(out);
  }
  std::vector<Variable> inputs() const {
    std::vector<Variable> v;
    for (size_t i = 0, n = input_count(); i < n; ++i) v.push_back(input(i));
    return v;
  }
  std::vector<Variable> outputs() const {
    std::vector<Variable> v;
    for (size_t i = 0, n = output_count(); i < n; ++i) v.push_back(output(i));
    return v;
  }
  /// Remove this application from the graph.
  void unchain() { check(ch_function_unchain(get())); }

  /// Run the forward computation again on plain arrays, recording nothing (the seed's
  /// `func.forward((x.data,))`, e.g. inside numerical_grad). The graph this application
  /// belongs to stays usable (see ch_function_forward). Returns all outputs.
  std::vector<Array> forward(const std::vector<Array>& inputs) const {
    std::vector<ch_array*> in;
    in.reserve(inputs.size());
    for (const Array& a : inputs) in.push_back(a.get());
    std::array<ch_array*, detail::kMaxOutputs> out{};
    size_t n = 0;
    ch_status st = ch_function_forward(get(), in.data(), in.size(), out.data(), out.size(), &n);
    std::array<Array, detail::kMaxOutputs> owned;
    for (size_t i = 0; i < out.size() && out[i]; ++i) owned[i] = Array::adopt(out[i]);
    check(st);
    if (n > detail::kMaxOutputs)
      detail::fail(CH_ERR_UNSUPPORTED, "function '" + name() + "' produced " + std::to_string(n) +
                                           " outputs; ch.hpp returns at most " +
                                           std::to_string(detail::kMaxOutputs));
    return std::vector<Array>(std::make_move_iterator(owned.begin()),
                              std::make_move_iterator(owned.begin() + n));
  }

  /// Give the function object a parameter and its gradient (same shape and dtype), both
  /// shared: backward accumulates into `grad` in place, optimizers update `param` in place.
  void add_parameter(const std::string& name, const Array& param, const Array& grad) {
    check(ch_function_add_parameter(get(), name.c_str(), param.get(), grad.get()));
  }
  size_t parameter_count() const noexcept { return ch_function_parameter_count(get()); }
  Parameter parameter(size_t index) const {
    ch_array* p = nullptr;
    ch_array* g = nullptr;
    const char* name = nullptr;
    ch_status st = ch_function_parameter(&p, &g, &name, get(), index);
    Parameter out{std::string(), Array::adopt(p), Array::adopt(g)};
    check(st);
    out.name = name ? name : "";
    return out;
  }
  std::vector<Parameter> parameters() const {
    std::vector<Parameter> v;
    for (size_t i = 0, n = parameter_count(); i < n; ++i) v.push_back(parameter(i));
    return v;
  }

 private:
  explicit Function(ch_function* adopted) noexcept : Handle(adopted) {}
};

inline Function Variable::creator() const {
  ch_function* out = nullptr;
  check(ch_variable_creator(&out, get()));
  return Function::adopt(out);
}

/// Options of ch::graph_dot (see ch_graph_dot_options).
struct GraphDotOptions {
  std::vector<std::string> output_names;  ///< labels of the outputs, in order (may be shorter)
  bool show_parameters = true;            ///< parameters (W, b) as named nodes
  std::string rankdir = "TB";             ///< Graphviz rankdir: TB, BT, LR or RL
};

/// The computational graph behind `outputs` as Graphviz DOT text (Chainer's
/// build_computational_graph): variables as ovals "(shape), dtype", functions as boxes.
inline std::string graph_dot(const std::vector<Variable>& outputs,
                             const GraphDotOptions& options = GraphDotOptions()) {
  std::vector<ch_variable*> vs;
  for (const Variable& v : outputs) vs.push_back(v.get());
  std::vector<const char*> names;
  for (const std::string& n : options.output_names) names.push_back(n.c_str());
  names.resize(vs.size(), nullptr);
  ch_graph_dot_options o{CH_GRAPH_DOT_OPTIONS_VERSION, options.show_parameters ? 0 : 1,
                         options.rankdir.c_str(), names.data()};
  char* out = nullptr;
  check(ch_variable_graph_dot(&out, vs.data(), vs.size(), &o));
  std::string dot(out);
  ch_string_free(out);
  return dot;
}

inline std::string Variable::graph_dot(const std::string& name) const {
  GraphDotOptions o;
  if (!name.empty()) o.output_names.push_back(name);
  return ch::graph_dot({*this}, o);
}

}  // namespace ch

#endif  // CH_VARIABLE_HPP
