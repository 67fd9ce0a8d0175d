#include "callback_function.h"

#include <cstddef>
#include <cstring>

#include "core/stream.h"
#include "error_state.h"
#include "handles.h"

namespace chainerc {

CallbackDefinition::CallbackDefinition(const ch_function_def& d)
    : name(d.name && d.name[0] ? d.name : "UserFunction"), def{} {
  // A version-1 definition ends before graph_backward: read only its fields.
  std::memcpy(&def, &d, d.version >= 2 ? sizeof def : offsetof(ch_function_def, graph_backward));
  def.name = nullptr;  // the copy in `name` is the one that lives
}

CallbackDefinition::~CallbackDefinition() {
  if (def.destroy) def.destroy(def.user_data);
}

CallbackFunction::~CallbackFunction() {
  if (user_destroy_) user_destroy_(user_data_);
}

BorrowedArrays::BorrowedArrays(const Arrays& arrays) {
  handles_.reserve(arrays.size());
  try {
    for (const Array& a : arrays)
      handles_.push_back(
          static_cast<ch_array*>(handle_new(HandleKind::Array, std::make_shared<Array>(a))));
  } catch (...) {
    // Not this->~BorrowedArrays(): the members would then be destroyed twice
    // (a double free of handles_ when a handle cannot be allocated).
    release_all();
    throw;
  }
}

BorrowedArrays::~BorrowedArrays() { release_all(); }

void BorrowedArrays::release_all() noexcept {
  for (ch_array* h : handles_) {
    try {
      handle_release(h, HandleKind::Array, "callback");
    } catch (...) {
      // the callback released a handle it had only borrowed; it is gone either way
    }
  }
  handles_.clear();
}

ScopedContext::ScopedContext(CallbackContext& state)
    : handle_(static_cast<ch_context*>(
          handle_new(HandleKind::Context, std::shared_ptr<void>(&state, [](void*) {})))) {}

ScopedContext::~ScopedContext() {
  try {
    handle_release(handle_, HandleKind::Context, "callback");
  } catch (...) {
  }
}

namespace {
bool any_on_gpu(const Arrays& arrays) {
  for (const Array& a : arrays)
    if (!a.device().is_cpu()) return true;
  return false;
}

// The device of the first input not on the CPU (the CPU if there is none).
Device callback_device(const Arrays& a, const Arrays& b) {
  for (const Arrays* arrays : {&a, &b})
    for (const Array& x : *arrays)
      if (!x.device().is_cpu()) return x.device();
  return Device{};
}

// Makes the callback's CUDA device current on this thread while it runs (the
// seed's forward_gpu ran inside the inputs' device context), restoring the
// previous one afterwards. Nothing for the CPU.
class CallbackDeviceScope {
 public:
  explicit CallbackDeviceScope(Device d) : pushed_(!d.is_cpu()) {
    if (pushed_) push_device(d.index, "user function callback");
  }
  ~CallbackDeviceScope() {
    if (!pushed_) return;
    try {
      pop_device("user function callback");
    } catch (...) {
      // a callback that popped more than it pushed; the scope is gone either way
    }
  }
  CallbackDeviceScope(const CallbackDeviceScope&) = delete;
  CallbackDeviceScope& operator=(const CallbackDeviceScope&) = delete;

 private:
  bool pushed_;
};
}  // namespace

Arrays CallbackFunction::forward(const Arrays& inputs) {
  const ch_function_def& d = def_->def;
  const bool gpu = any_on_gpu(inputs);
  ch_forward_callback cb = gpu ? (d.forward_gpu ? d.forward_gpu : d.forward)
                               : (d.forward_cpu ? d.forward_cpu : d.forward);
  if (!cb)
    fail(CH_ERR_UNSUPPORTED, "function '", name(), "' has no forward callback for ",
         gpu ? "GPU" : "CPU", " inputs");
  Arrays outs;
  CallbackContext state{CallbackContext::Phase::Forward, name(), shared_from_this()};
  state.outputs = &outs;
  state.saved = &saved_;
  state.user_data = &user_data_;
  state.user_destroy = &user_destroy_;
  state.device = callback_device(inputs, {});
  {
    CallbackDeviceScope scope(state.device);
    BorrowedArrays args(inputs);
    ScopedContext ctx(state);
    invoke_callback(name(), "forward",
                    [&] { return cb(d.user_data, ctx.handle(), args.handles(), args.size()); });
  }
  if (outs.empty())
    fail(CH_ERR_CALLBACK, "function '", name(),
         "' forward reported no outputs (report them with ch_context_add_output)");
  outputs_ = outs;
  return outs;
}

Arrays CallbackFunction::backward(const Arrays& inputs, const Arrays& grad_outputs) {
  const ch_function_def& d = def_->def;
  const bool gpu = any_on_gpu(inputs) || any_on_gpu(grad_outputs);
  ch_backward_callback cb = gpu ? (d.backward_gpu ? d.backward_gpu : d.backward)
                                : (d.backward_cpu ? d.backward_cpu : d.backward);
  Arrays grads(inputs.size());
  if (!cb) return grads;  // not differentiable: no gradient for any input
  CallbackContext state{CallbackContext::Phase::Backward, name(), shared_from_this()};
  state.inputs = &inputs;
  state.grad_inputs = &grads;
  state.saved = &saved_;
  state.user_data = &user_data_;
  state.user_destroy = &user_destroy_;
  state.device = callback_device(inputs, grad_outputs);
  CallbackDeviceScope scope(state.device);
  BorrowedArrays in(inputs), out(outputs_), gout(grad_outputs);
  ScopedContext ctx(state);
  invoke_callback(name(), "backward", [&] {
    return cb(d.user_data, ctx.handle(), in.handles(), in.size(), out.handles(), out.size(),
              gout.handles(), gout.size());
  });
  return grads;
}

namespace {
// Handles for variables lent to a graph backward callback (as BorrowedArrays).
class BorrowedVariables {
 public:
  explicit BorrowedVariables(const std::vector<VarPtr>& vs) {
    handles_.reserve(vs.size());
    try {
      for (const VarPtr& v : vs)
        handles_.push_back(static_cast<ch_variable*>(handle_new(HandleKind::Variable, v)));
    } catch (...) {
      release_all();
      throw;
    }
  }
  ~BorrowedVariables() { release_all(); }
  BorrowedVariables(const BorrowedVariables&) = delete;
  BorrowedVariables& operator=(const BorrowedVariables&) = delete;
  ch_variable* const* handles() const { return handles_.data(); }
  size_t size() const { return handles_.size(); }

 private:
  void release_all() noexcept {
    for (ch_variable* h : handles_) {
      try {
        handle_release(h, HandleKind::Variable, "graph backward callback");
      } catch (...) {
      }
    }
    handles_.clear();
  }
  std::vector<ch_variable*> handles_;
};
}  // namespace

std::vector<VarPtr> CallbackFunction::backward_graph(const FuncPtr& self,
                                                     const std::vector<VarPtr>& gy) {
  const ch_function_def& d = def_->def;
  std::vector<VarPtr> xs(inputs.begin(), inputs.end()), ys;
  for (size_t i = 0; i < outputs.size(); ++i)
    ys.push_back(output_variable(self, i, i < outputs_.size() ? outputs_[i] : Array()));
  Arrays in_arrays;
  for (const VarPtr& x : xs) in_arrays.push_back(x->data);
  Arrays unused_grads(xs.size());
  CallbackContext state{CallbackContext::Phase::Backward, name(), shared_from_this()};
  state.inputs = &in_arrays;
  state.grad_inputs = &unused_grads;
  state.saved = &saved_;
  state.user_data = &user_data_;
  state.user_destroy = &user_destroy_;
  Arrays gy_arrays;
  for (const VarPtr& g : gy) gy_arrays.push_back(g->data);
  state.device = callback_device(in_arrays, gy_arrays);
  std::vector<ch_variable*> results(xs.size(), nullptr);
  struct Release {
    std::vector<ch_variable*>& r;
    ~Release() {
      for (ch_variable*& h : r) {
        try {
          if (h) handle_release(h, HandleKind::Variable, "graph backward callback");
        } catch (...) {
        }
        h = nullptr;
      }
    }
  } release{results};
  std::vector<VarPtr> gxs(xs.size());
  {
    CallbackDeviceScope scope(state.device);
    BorrowedVariables in(xs), out(ys), gout(gy);
    ScopedContext ctx(state);
    invoke_callback(name(), "graph backward", [&] {
      return d.graph_backward(d.user_data, ctx.handle(), in.handles(), in.size(), out.handles(),
                              out.size(), gout.handles(), gout.size(), results.data());
    });
    for (size_t i = 0; i < results.size(); ++i) {
      if (!results[i]) continue;
      std::string arg = "grad_inputs[" + std::to_string(i) + "]";
      gxs[i] = handle_shared<VariableImpl>(results[i], HandleKind::Variable, name(), arg.c_str());
    }
  }
  return gxs;
}

}  // namespace chainerc
