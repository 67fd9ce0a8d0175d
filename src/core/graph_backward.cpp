// The general backward engine: gradients held as variables in a table of
// this pass (not in the variables' grad fields), for ch_grad and for
// ch_variable_backward_ex. With enable_double_backprop each node's
// backward_graph runs with recording on, so the gradients are graphs that
// can be differentiated again; without it, nodes run their array backward
// (or, for nodes with parameters inside ch_grad, their backward_graph with
// recording off) and the gradients are plain roots. Visiting order and the
// summing of gradients are those of backward.cpp; the array engine there
// stays the path of ch_variable_backward.
#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "backward_checks.h"
#include "device_backend.h"
#include "error.h"
#include "grad_mode.h"
#include "variable.h"

namespace chainerc {

std::vector<VarPtr> Function::backward_graph(const FuncPtr&, const std::vector<VarPtr>&) {
  fail(CH_ERR_GRAPH, "function '", name(),
       "' has no graph backward, so its gradient cannot be differentiated (double backprop); "
       "give it one (ch_function_def.graph_backward for a user function)");
}

namespace {

thread_local int t_param_grads_off = 0;

struct ParamGradsOff {
  ParamGradsOff() { ++t_param_grads_off; }
  ~ParamGradsOff() { --t_param_grads_off; }
};

struct QueueEntry {
  int64_t rank;
  uint64_t order;
  FuncPtr f;
};
bool operator<(const QueueEntry& a, const QueueEntry& b) {
  return a.rank != b.rank ? a.rank < b.rank : a.order > b.order;
}

VarPtr add_grads(const VarPtr& a, const VarPtr& b);

// One pass. `targets` empty: every variable reached that requires a gradient
// (backward_ex); else only nodes on a path from a target to an output run.
class Pass {
 public:
  Pass(const BackwardOptions& o, bool in_grad) : opt_(o), in_grad_(in_grad) {}

  // A variable's gradient so far, and the variable itself kept alive so that
  // its address is not reused by a variable made during the pass.
  struct Entry {
    VarPtr var, grad;
  };
  std::unordered_map<const VariableImpl*, Entry> grads;

  void seed(const VarPtr& y, VarPtr g) { add(y, std::move(g)); }

  void limit_to(const std::vector<VarPtr>& targets) {
    limited_ = true;
    for (const VarPtr& x : targets) target_set_.insert(x.get());
  }

  void run(const std::vector<VarPtr>& roots) {
    std::vector<QueueEntry> heap;
    std::unordered_set<const Function*> queued;
    uint64_t order = 0;
    auto push = [&](const FuncPtr& f) {
      if (!queued.insert(f.get()).second) return;
      if (limited_ && !relevant(f.get())) return;
      heap.push_back(QueueEntry{f->rank, order++, f});
      std::push_heap(heap.begin(), heap.end());
    };
    for (const VarPtr& y : roots)
      if (y->creator) push(y->creator);

    while (!heap.empty()) {
      std::pop_heap(heap.begin(), heap.end());
      FuncPtr f = std::move(heap.back().f);
      heap.pop_back();
      bool unchained = false;
      uint64_t mask = 0;
      for (size_t i = 0; i < f->inputs.size(); ++i) {
        const VarPtr& x = f->inputs[i];
        if (!x) {
          unchained = true;
          break;
        }
        if (wants(*x) && i < 64) mask |= uint64_t{1} << i;
      }
      if (unchained) continue;
      const bool params = f->has_parameters() && !in_grad_;
      if (!f->inputs.empty() && f->inputs.size() <= 64 && mask == 0 && !params) continue;
      f->input_grad_mask = f->inputs.size() <= 64 ? mask : ~uint64_t{0};

      std::vector<VarPtr> gys;
      gys.reserve(f->outputs.size());
      for (size_t i = 0; i < f->outputs.size(); ++i) {
        gys.push_back(output_grad(*f, i));
        check_output_grad(*f, i, gys.back()->data);
      }
      std::vector<VarPtr> gxs = node_backward(f, gys);
      gys.clear();
      if (gxs.size() != f->inputs.size())
        fail(CH_ERR_CALLBACK, "function '", f->name(), "' backward returned ", gxs.size(),
             " gradients for ", f->inputs.size(), " inputs");
      for (size_t i = 0; i < gxs.size(); ++i)
        if (gxs[i]) check_grad(*f, i, gxs[i]->data, f->inputs[i]->data);
      // The outputs' gradients are used up: keep them only where wanted.
      for (auto& w : f->outputs)
        if (VarPtr y = w.lock()) {
          auto it = grads.find(y.get());
          if (it == grads.end()) continue;
          if (opt_.retain_grad) {
            refuse_if_a_pass_owns(*y, "backward");
            store_field(*y, it->second.grad);
          }
          if (!is_target(y.get()) && !is_root(y.get())) grads.erase(it);
        }
      for (size_t i = 0; i < gxs.size(); ++i) {
        const VarPtr& x = f->inputs[i];
        if (!gxs[i] || !wants(*x)) continue;
        add(x, std::move(gxs[i]));
        if (x->creator) push(x->creator);
      }
    }
  }

  void set_roots(const std::vector<VarPtr>& roots) {
    for (const VarPtr& y : roots) root_set_.insert(y.get());
  }

  static void store_field(VariableImpl& x, const VarPtr& g) {
    // The replaced values go once every field is set (their release
    // callbacks may set this very gradient).
    Array old_grad = std::move(x.grad);
    VarPtr old_graph = std::move(x.grad_var);
    x.grad = g->data;
    x.grad_var = g;
    x.grad_epoch = next_backward_epoch();  // not 0: not a gradient the user set
    x.grad_owned = false;
  }

 private:
  bool is_target(const VariableImpl* v) const { return target_set_.count(v) != 0; }
  bool is_root(const VariableImpl* v) const { return root_set_.count(v) != 0; }

  bool wants(const VariableImpl& x) const {
    if (!x.requires_grad) return false;
    if (!limited_) return true;
    return is_target(&x) || (x.creator && relevant(x.creator.get()));
  }

  // Whether some target lies behind node f (memoised, iterative).
  bool relevant(const Function* f) const {
    auto it = relevant_.find(f);
    if (it != relevant_.end()) return it->second;
    std::vector<std::pair<const Function*, size_t>> stack{{f, 0}};
    relevant_[f] = false;
    while (!stack.empty()) {
      auto& [g, next] = stack.back();
      bool done = true;
      while (next < g->inputs.size()) {
        const VarPtr& x = g->inputs[next++];
        if (!x) continue;
        if (is_target(x.get())) {
          relevant_[g] = true;
          continue;
        }
        if (!x->creator) continue;
        auto r = relevant_.find(x->creator.get());
        if (r == relevant_.end()) {
          relevant_[x->creator.get()] = false;
          stack.push_back({x->creator.get(), 0});
          done = false;
          break;
        }
        if (r->second) relevant_[g] = true;
      }
      if (!done) continue;
      const Function* finished = g;
      bool value = relevant_[finished];
      stack.pop_back();
      if (!stack.empty() && value) relevant_[stack.back().first] = true;
    }
    return relevant_[f];
  }

  void add(const VarPtr& x, VarPtr g) {
    auto it = grads.find(x.get());
    if (it == grads.end())
      grads.emplace(x.get(), Entry{x, std::move(g)});
    else
      it->second.grad = add_grads(it->second.grad, g);
  }

  VarPtr output_grad(const Function& f, size_t i) {
    if (VarPtr y = f.outputs[i].lock()) {
      auto it = grads.find(y.get());
      if (it != grads.end()) return it->second.grad;
      // A grad the user set on another output (see backward.cpp).
      if (y->grad.defined() && y->grad_epoch == 0) return grad_variable(y);
    }
    const OutputInfo& info = f.output_info[i];
    return constant_variable(Array::zeros(info.dtype, info.shape, info.device));
  }

  std::vector<VarPtr> node_backward(const FuncPtr& f, const std::vector<VarPtr>& gys) {
    if (opt_.enable_double_backprop) {
      if (!f->has_graph_backward())
        fail(CH_ERR_GRAPH, "double backprop: function '", f->name(),
             "' has no graph backward, so its gradient cannot be differentiated; give it one "
             "(ch_function_def.graph_backward for a user function) or run backward without "
             "enable_double_backprop");
      BackpropModeScope on(true);
      return f->backward_graph(f, gys);
    }
    if (f->has_parameters() && f->has_graph_backward()) {
      // Parameterised nodes inside ch_grad: the graph backward honours
      // parameter_grads_enabled(), the array one may not (SGD's in-backward step).
      BackpropModeScope off(false);
      return f->backward_graph(f, gys);
    }
    if (in_grad_ && f->has_parameters())
      fail(CH_ERR_GRAPH, "grad: function '", f->name(),
           "' has parameters and no graph backward, so its gradient cannot be computed without "
           "touching its parameters' gradients; use ch_variable_backward");
    Arrays in, gouts;
    for (size_t i = 0; i < f->inputs.size(); ++i)
      in.push_back(f->retains_data_of(i) || i >= f->forward_inputs.size() ? f->inputs[i]->data
                                                                          : f->forward_inputs[i]);
    for (const VarPtr& g : gys) gouts.push_back(g->data);
    Arrays gx = f->backward(in, gouts);
    std::vector<VarPtr> out;
    out.reserve(gx.size());
    for (Array& a : gx)
      out.push_back(a.defined() ? std::make_shared<VariableImpl>(std::move(a)) : nullptr);
    return out;
  }

  BackwardOptions opt_;
  bool in_grad_;
  bool limited_ = false;
  std::unordered_set<const VariableImpl*> target_set_, root_set_;
  mutable std::unordered_map<const Function*, bool> relevant_;
};

VarPtr add_grads(const VarPtr& a, const VarPtr& b);

// The seed of output y: given, else y's grad, else ones for one element.
VarPtr seed_for(const VarPtr& y, const VarPtr& given, const char* who) {
  if (given) {
    if (given->data.shape() != y->data.shape() || given->data.dtype() != y->data.dtype())
      fail(CH_ERR_SHAPE, who, ": the output gradient is a ", given->data.describe(),
           " but the output is a ", y->data.describe());
    return given;
  }
  if (VarPtr g = grad_variable(y)) {
    if (g->data.shape() != y->data.shape() || g->data.dtype() != y->data.dtype())
      fail(CH_ERR_SHAPE, who, ": the initial error is a ", g->data.describe(),
           " but the variable's data is a ", y->data.describe());
    return g;
  }
  if (y->data.size() != 1)
    fail(CH_ERR_GRAPH, who, ": the variable has shape ", y->data.shape().to_string(),
         " and no grad; set its grad (the initial error) first — only one-element variables get "
         "ones");
  return constant_variable(Array::full(y->data.dtype(), y->data.shape(), 1.0, y->data.device()));
}

}  // namespace

namespace {
// a + b for summing gradients: the engine's own function (core does not
// know src/ops), differentiable, with a graph backward.
class GradAdd final : public Function {
 public:
  const char* name() const override { return "GradAdd"; }
  bool retains_input(size_t) const override { return false; }
  Arrays forward(const Arrays& in) override {
    Array sum = in[0].copy();
    backend_for(sum.device(), "backward").accumulate(sum, in[1]);
    return {sum};
  }
  Arrays backward(const Arrays&, const Arrays& gy) override { return {gy[0], gy[0]}; }
  bool has_graph_backward() const override { return true; }
  std::vector<VarPtr> backward_graph(const FuncPtr&, const std::vector<VarPtr>& gy) override {
    return {gy[0], gy[0]};
  }
};

VarPtr add_grads(const VarPtr& a, const VarPtr& b) {
  if (a->data.shape() != b->data.shape() || a->data.dtype() != b->data.dtype())
    fail(CH_ERR_INTERNAL, "backward: gradients of one variable differ: ", a->data.describe(),
         " and ", b->data.describe());
  return apply1(std::make_shared<GradAdd>(), {a, b});
}
}  // namespace

bool parameter_grads_enabled() noexcept { return t_param_grads_off == 0; }

VarPtr constant_variable(const Array& a) {
  auto v = std::make_shared<VariableImpl>(a);
  v->requires_grad = false;
  return v;
}

VarPtr grad_variable(const VarPtr& v) {
  if (!v->grad.defined()) return nullptr;
  if (v->grad_var && v->grad_var->data.shares_memory_with(v->grad) &&
      v->grad_var->data.shape() == v->grad.shape() && v->grad_var->data.dtype() == v->grad.dtype())
    return v->grad_var;
  return constant_variable(v->grad);
}

VarPtr output_variable(const FuncPtr& self, size_t i, const Array& data) {
  if (i >= self->outputs.size()) fail(CH_ERR_INTERNAL, self->name(), ": no output ", i);
  if (VarPtr y = self->outputs[i].lock()) {
    // Its data may have been released (no handle, no consumer reading it):
    // the node kept the same array, which becomes its data again.
    std::lock_guard<std::mutex> lock(variable_release_mutex());
    if (y->data_released && data.defined()) {
      y->data = data;
      y->data_released = false;
    }
    return y;
  }
  if (!data.defined())
    fail(CH_ERR_INTERNAL, self->name(), ": output ", i, " was freed and its data not kept");
  auto y = std::make_shared<VariableImpl>(data);
  y->creator = self;
  y->made_by_function.store(true, std::memory_order_relaxed);
  y->rank = self->rank + 1;
  bool requires_grad = self->inputs.empty() || self->has_parameters();
  for (const VarPtr& x : self->inputs) requires_grad = requires_grad || (x && x->requires_grad);
  y->requires_grad = requires_grad;
  self->outputs[i] = y;
  return y;
}

void backward_ex(const VarPtr& root, const BackwardOptions& options) {
  if (!options.enable_double_backprop) {
    backward(root, options.retain_grad);
    return;
  }
  VarPtr seed = seed_for(root, nullptr, "backward");
  Pass pass(options, false);
  pass.set_roots({root});
  pass.seed(root, seed);
  // Called from a backward callback, it must not replace what the running
  // pass (backward.cpp) is summing: all is checked before anything is stored.
  refuse_if_a_pass_owns(*root, "backward");
  Pass::store_field(*root, seed);
  pass.run({root});
  for (auto& [ptr, e] : pass.grads)
    if (e.var != root && !e.var->creator) refuse_if_a_pass_owns(*e.var, "backward");
  for (auto& [ptr, e] : pass.grads)
    if (e.var != root && !e.var->creator) Pass::store_field(*e.var, e.grad);
}

std::vector<VarPtr> grad(const std::vector<VarPtr>& outputs, const std::vector<VarPtr>& inputs,
                         const std::vector<VarPtr>& grad_outputs, const BackwardOptions& options) {
  if (!grad_outputs.empty() && grad_outputs.size() != outputs.size())
    fail(CH_ERR_INVALID_ARGUMENT, "grad: ", outputs.size(), " outputs but ", grad_outputs.size(),
         " grad_outputs");
  ParamGradsOff no_params;
  Pass pass(options, true);
  pass.limit_to(inputs);
  pass.set_roots(outputs);
  for (size_t j = 0; j < outputs.size(); ++j) {
    if (!outputs[j]) fail(CH_ERR_INVALID_ARGUMENT, "grad: output ", j, " is missing");
    pass.seed(outputs[j],
              seed_for(outputs[j], grad_outputs.empty() ? nullptr : grad_outputs[j], "grad"));
  }
  pass.run(outputs);
  std::vector<VarPtr> out;
  out.reserve(inputs.size());
  for (const VarPtr& x : inputs) {
    auto it = pass.grads.find(x.get());
    out.push_back(it == pass.grads.end() ? nullptr : it->second.grad);
  }
  return out;
}

}  // namespace chainerc
