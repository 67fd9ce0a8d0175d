// chainerc's C++ API: ch::FunctionBase, differentiable functions
// written in C++ (over <ch/function.h>).
// Part of <ch/ch.hpp>, which says what the C++ layer adds, how exceptions and
// callbacks behave and the threading contract; header-only.
#ifndef CH_FUNCTION_HPP
#define CH_FUNCTION_HPP

#include <ch/variable.hpp>

namespace ch {
// ===========================================================================================
// User-defined functions
// ===========================================================================================

class FunctionBase;

namespace detail {

// Shared by the C function object's user data and every application. ~FunctionBase clears
// `target`, so a graph node that outlives a (non-shared) C++ object fails cleanly.
struct FunctionLink {
  FunctionBase* target = nullptr;
  std::string name;
};

// Per-application user data: keeps a shared_ptr-owned FunctionBase alive as long as the
// graph node that applied it.
struct ApplicationData {
  std::shared_ptr<FunctionLink> link;
  std::shared_ptr<FunctionBase> keep_alive;
};

inline ch_context*& current_context() {
  thread_local ch_context* ctx = nullptr;
  return ctx;
}

class ContextScope {
 public:
  explicit ContextScope(ch_context* ctx) noexcept : saved_(current_context()) {
    current_context() = ctx;
  }
  ~ContextScope() { current_context() = saved_; }
  ContextScope(const ContextScope&) = delete;
  ContextScope& operator=(const ContextScope&) = delete;

 private:
  ch_context* saved_;
};

inline std::vector<Array> borrow_all(ch_array* const* arrays, size_t n) {
  std::vector<Array> v;
  v.reserve(n);
  for (size_t i = 0; i < n; ++i) v.push_back(Array::borrow(arrays[i]));
  return v;
}

inline bool all_on_cpu(const std::vector<Array>& arrays) {
  return std::all_of(arrays.begin(), arrays.end(), [](const Array& a) { return !a || a.on_cpu(); });
}

}  // namespace detail

/// Base class of differentiable functions written in C++ (the seed's chainer.Function).
///
/// Override forward() and backward() (device-independent), or forward_cpu()/backward_cpu()
/// (and forward_gpu()/backward_gpu()): the default forward() and backward() dispatch on the
/// inputs' device. backward() returns one gradient per input; an empty Array means no
/// gradient for that input. The default backward returns none (not differentiable).
/// Arrays passed in are the engine's, not copies: never write to them.
///
///   struct MulAdd : ch::FunctionBase {
///     MulAdd() : FunctionBase("MulAdd") {}
///     std::vector<ch::Array> forward(const std::vector<ch::Array>& in) override;
///     std::vector<ch::Array> backward(const std::vector<ch::Array>& in,
///                                     const std::vector<ch::Array>& out,
///                                     const std::vector<ch::Array>& gout) override;
///   };
///   MulAdd f;
///   ch::Variable w = f(x, y, z);
///
/// Every application is a separate graph node sharing this object and its parameters, so
/// keep per-application state with save_for_backward()/saved(), not in members.
///
/// Lifetime: create it with std::make_shared and the graph keeps it alive as long as any
/// node made by it. An object not owned by a shared_ptr (on the stack, a member) must
/// outlive the graphs it built; a backward through a node whose object is gone fails with
/// CH_ERR_CALLBACK (it never touches freed memory). Not copyable, not movable.
///
/// Exceptions thrown by the overrides are caught before they reach the C library and
/// rethrown by ch::check() to the caller of apply()/backward() with their original type.
class FunctionBase : public std::enable_shared_from_this<FunctionBase> {
 public:
  /// A function object named `name` (used in error messages and graph inspection).
  /// With graph_backward, backward_graph() is the function's backward over variables, used
  /// by double backprop (Variable::backward(retain, true), ch::grad(..., true)); without
  /// it double backprop through the function is CH_ERR_GRAPH naming it.
  explicit FunctionBase(const std::string& name = "Function", bool graph_backward = false)
      : link_(std::make_shared<detail::FunctionLink>()) {
    link_->target = this;
    link_->name = name;
    auto* user_data = new std::shared_ptr<detail::FunctionLink>(link_);
    ch_function_def def{};
    def.version = CH_FUNCTION_DEF_VERSION;
    def.name = name.c_str();
    def.forward = &FunctionBase::forward_callback;
    def.backward = &FunctionBase::backward_callback;
    if (graph_backward) def.graph_backward = &FunctionBase::graph_backward_callback;
    def.user_data = user_data;
    def.destroy = &FunctionBase::destroy_user_data;
    ch_function* out = nullptr;
    ch_status st = ch_function_new(&out, &def);
    if (st != CH_OK) delete user_data;  // on failure the library does not call destroy
    check(st);
    function_ = Function::adopt(out);
  }
  virtual ~FunctionBase() { link_->target = nullptr; }

  FunctionBase(const FunctionBase&) = delete;
  FunctionBase& operator=(const FunctionBase&) = delete;
  FunctionBase(FunctionBase&&) = delete;
  FunctionBase& operator=(FunctionBase&&) = delete;

  /// Compute the outputs. Default: forward_cpu() if every input is on the CPU, else
  /// forward_gpu().
  virtual std::vector<Array> forward(const std::vector<Array>& inputs) {
    return detail::all_on_cpu(inputs) ? forward_cpu(inputs) : forward_gpu(inputs);
  }
  /// Compute the input gradients (one per input; empty Array = none). Default:
  /// backward_cpu() if every input and gradient is on the CPU, else backward_gpu().
  virtual std::vector<Array> backward(const std::vector<Array>& inputs,
                                      const std::vector<Array>& outputs,
                                      const std::vector<Array>& grad_outputs) {
    return detail::all_on_cpu(inputs) && detail::all_on_cpu(grad_outputs)
               ? backward_cpu(inputs, outputs, grad_outputs)
               : backward_gpu(inputs, outputs, grad_outputs);
  }
  /// Forward on CPU arrays. Default: CH_ERR_UNSUPPORTED.
  virtual std::vector<Array> forward_cpu(const std::vector<Array>&) {
    detail::fail(CH_ERR_UNSUPPORTED, "function '" + name() + "' implements no CPU forward");
  }
  /// Forward on GPU arrays. Default: CH_ERR_UNSUPPORTED.
  virtual std::vector<Array> forward_gpu(const std::vector<Array>&) {
    detail::fail(CH_ERR_UNSUPPORTED, "function '" + name() + "' implements no GPU forward");
  }
  /// Backward on CPU arrays. Default: no gradient for any input.
  virtual std::vector<Array> backward_cpu(const std::vector<Array>& inputs,
                                          const std::vector<Array>&, const std::vector<Array>&) {
    return std::vector<Array>(inputs.size());
  }
  /// Backward on GPU arrays. Default: no gradient for any input.
  virtual std::vector<Array> backward_gpu(const std::vector<Array>& inputs,
                                          const std::vector<Array>&, const std::vector<Array>&) {
    return std::vector<Array>(inputs.size());
  }

  /// The input gradients as variables built with ch:: functions (one per input; an empty
  /// Variable = none), for objects constructed with graph_backward.
  virtual std::vector<Variable> backward_graph(const std::vector<Variable>& inputs,
                                               const std::vector<Variable>& outputs,
                                               const std::vector<Variable>& grad_outputs) {
    (void)outputs;
    (void)grad_outputs;
    detail::fail(CH_ERR_GRAPH, "function '" + name() + "' overrides no backward_graph");
    return std::vector<Variable>(inputs.size());
  }

  /// The name given to the constructor.
  const std::string& name() const noexcept { return link_->name; }
  /// The C function object (for the C API or ch::check_backward).
  const Function& function() const noexcept { return function_; }

  /// Apply to `inputs`: a new graph node. Returns every output.
  std::vector<Variable> apply(const std::vector<Variable>& inputs) const {
    return function_.apply(inputs);
  }
  /// Apply and return the only output.
  template <class... V, class = std::enable_if_t<detail::all_variables<V...>>>
  Variable operator()(const V&... inputs) const {
    return function_(inputs...);
  }

  /// Register a parameter and its gradient (same shape and dtype, both shared).
  void add_parameter(const std::string& name, const Array& param, const Array& grad) {
    function_.add_parameter(name, param, grad);
  }
  /// The registered parameters, in order.
  std::vector<Parameter> parameters() const { return function_.parameters(); }

 protected:
  /// During forward(): keep `array` for this application's backward.
  static void save_for_backward(const Array& array) {
    check(ch_context_save(require_context("save_for_backward"), array.get()));
  }
  /// During forward() or backward(): the device the callback runs for (the
  /// CUDA device of its inputs, current while it runs, or the CPU).
  static ch_device context_device() { return ch_context_device(require_context("context_device")); }
  /// In forward_gpu()/backward_gpu(): the cudaStream_t to queue the host's own
  /// device work on (the stream chainerc's kernels use: the default stream,
  /// nullptr, today). See ch_context_stream in <ch/function.h>.
  static void* context_stream() { return ch_context_stream(require_context("context_stream")); }
  /// During backward() (or forward()): the arrays this application saved, in order.
  static std::vector<Array> saved() {
    ch_context* ctx = require_context("saved");
    std::vector<Array> v;
    for (size_t i = 0, n = ch_context_saved_count(ctx); i < n; ++i) {
      ch_array* out = nullptr;
      check(ch_context_saved(&out, ctx, i));
      v.push_back(Array::adopt(out));
    }
    return v;
  }

 private:
  static ch_context* require_context(const char* who) {
    ch_context* ctx = detail::current_context();
    if (!ctx)
      detail::fail(CH_ERR_CALLBACK, std::string("FunctionBase::") + who +
                                        " is callable only inside forward or backward");
    return ctx;
  }

  static FunctionBase& target_of(void* user_data) {
    const detail::FunctionLink& link =
        **static_cast<std::shared_ptr<detail::FunctionLink>*>(user_data);
    if (!link.target)
      detail::fail(CH_ERR_CALLBACK, "the C++ object of function '" + link.name +
                                        "' was destroyed while graph nodes made by it were "
                                        "alive (own it with std::make_shared)");
    return *link.target;
  }

  static void destroy_user_data(void* user_data) {
    delete static_cast<std::shared_ptr<detail::FunctionLink>*>(user_data);
  }
  static void destroy_application_data(void* data) {
    delete static_cast<detail::ApplicationData*>(data);
  }

  static ch_status forward_callback(void* user_data, ch_context* ctx, ch_array* const* inputs,
                                    size_t n_inputs) {
    return detail::guard([&] {
      FunctionBase& self = target_of(user_data);
      std::vector<Array> xs = detail::borrow_all(inputs, n_inputs);
      std::vector<Array> ys;
      {
        detail::ContextScope scope(ctx);
        ys = self.forward(xs);
      }
      for (size_t i = 0; i < ys.size(); ++i) {
        if (!ys[i])
          detail::fail(CH_ERR_CALLBACK, "function '" + self.name() +
                                            "': forward returned an "
                                            "empty array as output " +
                                            std::to_string(i));
        check(ch_context_add_output(ctx, ys[i].get()));
      }
      // Keep a shared_ptr-owned object alive as long as this graph node.
      auto data = std::make_unique<detail::ApplicationData>();
      data->link = *static_cast<std::shared_ptr<detail::FunctionLink>*>(user_data);
      data->keep_alive = self.weak_from_this().lock();
      if (data->keep_alive) {
        check(ch_context_set_user_data(ctx, data.get(), &FunctionBase::destroy_application_data));
        data.release();
      }
    });
  }

  static ch_status backward_callback(void* user_data, ch_context* ctx, ch_array* const* inputs,
                                     size_t n_inputs, ch_array* const* outputs, size_t n_outputs,
                                     ch_array* const* grad_outputs, size_t n_grad_outputs) {
    return detail::guard([&] {
      FunctionBase& self = target_of(user_data);
      std::vector<Array> xs = detail::borrow_all(inputs, n_inputs);
      std::vector<Array> ys = detail::borrow_all(outputs, n_outputs);
      std::vector<Array> gys = detail::borrow_all(grad_outputs, n_grad_outputs);
      std::vector<Array> gxs;
      {
        detail::ContextScope scope(ctx);
        gxs = self.backward(xs, ys, gys);
      }
      if (gxs.size() != n_inputs)
        detail::fail(CH_ERR_CALLBACK, "function '" + self.name() + "': backward returned " +
                                          std::to_string(gxs.size()) + " gradients for " +
                                          std::to_string(n_inputs) + " inputs");
      for (size_t i = 0; i < gxs.size(); ++i)
        if (gxs[i]) check(ch_context_set_grad_input(ctx, i, gxs[i].get()));
    });
  }

  static ch_status graph_backward_callback(void* user_data, ch_context* ctx,
                                           ch_variable* const* inputs, size_t n_inputs,
                                           ch_variable* const* outputs, size_t n_outputs,
                                           ch_variable* const* grad_outputs, size_t n_grad_outputs,
                                           ch_variable** grad_inputs) {
    return detail::guard([&] {
      FunctionBase& self = target_of(user_data);
      auto borrow = [](ch_variable* const* hs, size_t n) {
        std::vector<Variable> v;
        for (size_t i = 0; i < n; ++i) v.push_back(Variable::borrow(hs[i]));
        return v;
      };
      std::vector<Variable> gxs;
      {
        detail::ContextScope scope(ctx);
        gxs = self.backward_graph(borrow(inputs, n_inputs), borrow(outputs, n_outputs),
                                  borrow(grad_outputs, n_grad_outputs));
      }
      if (gxs.size() != n_inputs)
        detail::fail(CH_ERR_CALLBACK, "function '" + self.name() + "': backward_graph returned " +
                                          std::to_string(gxs.size()) + " gradients for " +
                                          std::to_string(n_inputs) + " inputs");
      for (size_t i = 0; i < gxs.size(); ++i)
        grad_inputs[i] = gxs[i] ? ch_variable_retain(gxs[i].get()) : nullptr;
    });
  }

  std::shared_ptr<detail::FunctionLink> link_;
  Function function_;
};

}  // namespace ch

#endif  // CH_FUNCTION_HPP
