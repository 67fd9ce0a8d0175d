// Error backpropagation: visit function nodes from the output in decreasing
// rank (a node's rank exceeds the ranks of all nodes before it), so every
// variable has received the gradients of all its consumers before its own
// creator runs. Gradients arriving at one variable from several consumers are
// summed (the seed's splitter).
#include <algorithm>
#include <atomic>
#include <string>

#include "backward_checks.h"
#include "device_backend.h"
#include "error.h"
#include "variable.h"

namespace chainerc {
namespace {

std::atomic<uint64_t> g_epoch{0};

// The passes of this engine running on this thread, innermost first. A
// backward callback may start another pass (ch_variable_backward). The
// fields this engine keeps on the graph (a variable's grad and grad_epoch, a
// node's visit_epoch) belong to the pass that set them until it returns: a
// nested pass that took them over would replace a gradient the outer pass is
// still summing, or make it run a node twice (wrong gradients, no error). So
// a nested pass refuses, before it changes anything the outer pass owns, to
// reach such a field; on a graph of its own it runs as any pass does.
struct RunningPass {
  uint64_t epoch;
  const Function* node = nullptr;  // whose backward is running now
  RunningPass* outer;
};
thread_local RunningPass* t_running = nullptr;

struct PassScope {
  RunningPass pass;
  explicit PassScope(uint64_t epoch) : pass{epoch, nullptr, t_running} { t_running = &pass; }
  ~PassScope() { t_running = pass.outer; }
  PassScope(const PassScope&) = delete;
  PassScope& operator=(const PassScope&) = delete;
};

const RunningPass* owner_of(uint64_t epoch, const RunningPass* from) noexcept {
  if (epoch == 0) return nullptr;  // a gradient the user set
  for (const RunningPass* p = from; p; p = p->outer)
    if (p->epoch == epoch) return p;
  return nullptr;
}

[[noreturn]] void fail_owned(const RunningPass& p, const char* who, const std::string& what) {
  fail(CH_ERR_GRAPH, who, ": called from inside the backward of '", p.node ? p.node->name() : "?",
       "', it reached ", what,
       ", which that outer backward pass is still processing; a backward started from a "
       "callback must work on a graph the outer pass does not reach (run it after the outer "
       "backward returns, or use ch_grad, which keeps its gradients to itself)");
}

template <typename What>
[[gnu::noinline, gnu::cold]] void refuse_if_owned_by(uint64_t epoch, const RunningPass* from,
                                                     const char* who, What& what) {
  if (const RunningPass* p = owner_of(epoch, from)) fail_owned(*p, who, what());
}

// Refuses what `what()` names (a variable's gradient or a node) when a pass
// enclosing the current one (from `from` outwards) owns it; the name is made
// only then. With no enclosing pass (every pass not started from a backward
// callback) there is nothing to refuse: the walk and the messages' code stay
// out of line, so the engine's loop does one compare per check.
template <typename What>
void refuse_if_owned(uint64_t epoch, const RunningPass* from, const char* who, What&& what) {
  if (from) refuse_if_owned_by(epoch, from, who, what);
}

struct QueueEntry {
  int64_t rank;
  uint64_t order;  // insertion order breaks ties deterministically
  FuncPtr f;
};
bool operator<(const QueueEntry& a, const QueueEntry& b) {
  return a.rank != b.rank ? a.rank < b.rank : a.order > b.order;
}

// Gradient for output i of f: the output's gradient from this pass or one
// the user set (ch_variable_set_grad leaves grad_epoch 0: Chainer passes
// every output's grad to the creator, e.g. both c and h of an LSTM), or zeros.
// Where nothing keeps it after f's backward (no retain_grad, not the root),
// the gradient moves out of the variable: f's backward then holds the only
// reference, unless another gradient shares it, and may write its own
// result over it (Array::unshared).
Array output_grad(const Function& f, size_t i, uint64_t epoch, bool retain_grad,
                  const VarPtr& root) {
  const OutputInfo& info = f.output_info[i];
  if (VarPtr y = f.outputs[i].lock())
    if (y->grad.defined() && (y->grad_epoch == epoch || y->grad_epoch == 0)) {
      check_output_grad(f, i, y->grad);
      return retain_grad || y == root ? y->grad : std::move(y->grad);
    }
  return Array::zeros(info.dtype, info.shape, info.device);
}

void check_unchanged(const Function& f, size_t i, const Array& now, const Array& seen) {
  if (now.dtype() != seen.dtype() || now.shape() != seen.shape() || now.device() != seen.device())
    fail(CH_ERR_SHAPE, "backward: input ", i, " of '", f.name(), "' is now a ", now.describe(),
         " but forward computed from a ", seen.describe(),
         " (ch_variable_set_data replaced it); backward needs data of the shape forward saw");
}

void accumulate(const Function& f, size_t i, VariableImpl& x, Array gx, uint64_t epoch,
                const RunningPass* outer) {
  refuse_if_owned(x.grad_epoch, outer, "backward", [&] {
    return "the gradient of input " + std::to_string(i) + " of '" + f.name() + "'";
  });
  if (x.grad_epoch != epoch || !x.grad.defined()) {
    // What is replaced goes once every field is set: letting go of a wrapped
    // buffer runs its release callback, which may set this very gradient.
    Array old_grad = std::move(x.grad);
    VarPtr old_graph = std::move(x.grad_var);  // a double-backprop pass's graph, now stale
    x.grad = std::move(gx);                    // may alias another gradient: never written in place
    x.grad_epoch = epoch;
    x.grad_owned = false;
  } else {
    DeviceBackend& backend = backend_for(x.grad.device(), "backward");
    if (!x.grad_owned) {  // the first gradient may be another's: add into a copy
      x.grad = x.grad.copy();
      x.grad_owned = true;
    }
    backend.accumulate(x.grad, gx);
  }
}

}  // namespace

uint64_t next_backward_epoch() noexcept { return ++g_epoch; }

void refuse_if_a_pass_owns(const VariableImpl& x, const char* who) {
  refuse_if_owned(x.grad_epoch, t_running, who,
                  [] { return std::string("a variable's gradient"); });
}

void backward(const VarPtr& root, bool retain_grad) {
  const uint64_t epoch = ++g_epoch;
  PassScope running(epoch);
  // The passes enclosing this one, read once: t_running is thread-local (a
  // call into the dynamic loader per read from a shared library), and while
  // this pass runs it is always &running.pass (a nested pass restores it).
  // Null, as for every pass not started from a backward callback, leaves
  // nothing to refuse.
  const RunningPass* const outer = running.pass.outer;
  refuse_if_owned(root->grad_epoch, outer, "backward",
                  [] { return std::string("the variable it starts from"); });
  if (!root->grad.defined()) {
    if (root->data.size() != 1)
      fail(CH_ERR_GRAPH, "backward: the variable has shape ", root->data.shape().to_string(),
           " and no grad; set its grad (the initial error) first — only one-element variables get "
           "ones");
    root->grad = Array::full(root->data.dtype(), root->data.shape(), 1.0, root->data.device());
  } else if (root->grad.shape() != root->data.shape() || root->grad.dtype() != root->data.dtype()) {
    fail(CH_ERR_SHAPE, "backward: the initial error is a ", root->grad.describe(),
         " but the variable's data is a ", root->data.describe());
  }
  root->grad_epoch = epoch;
  root->grad_owned = false;
  if (!root->creator) return;

  std::vector<QueueEntry> heap;
  uint64_t order = 0;
  auto push = [&](const FuncPtr& f) {
    refuse_if_owned(f->visit_epoch, outer, "backward",
                    [&] { return std::string("'") + f->name() + "'"; });
    f->visit_epoch = epoch;
    heap.push_back(QueueEntry{f->rank, order++, f});
    std::push_heap(heap.begin(), heap.end());
  };
  push(root->creator);

  Arrays in, gouts;
  // The inputs as the node had them when its backward was called: the
  // callback may unchain the node (ch_function_unchain on its context's
  // function, ch_variable_unchain_backward on an output), which empties
  // f->inputs; its gradients still go to the inputs it had, as in Chainer,
  // whose backward holds func.inputs across the call.
  std::vector<VarPtr> xs;
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end());
    FuncPtr f = std::move(heap.back().f);
    heap.pop_back();

    in.clear();
    gouts.clear();
    bool unchained = false;  // unchained after it was queued (e.g. by a callback)
    uint64_t mask = 0;
    for (size_t i = 0; i < f->inputs.size(); ++i) {
      const VarPtr& x = f->inputs[i];
      if (!x) {
        unchained = true;
        break;
      }
      if (x->requires_grad) mask |= i < 64 ? uint64_t{1} << i : 0;
      if (!f->retains_data_of(i) && i < f->forward_inputs.size()) {
        // Backward reads nothing of this input but what forward saw: its
        // placeholder. A handle released on another thread may be releasing
        // x's data right now, so x->data is read only under the release lock,
        // and only to refuse a replacement of another shape, as below; data
        // never replaced has forward's shape, and needs neither.
        if (x->data_replaced.load(std::memory_order_acquire)) {
          std::lock_guard<std::mutex> lock(variable_release_mutex());
          if (!x->data_released) check_unchanged(*f, i, x->data, f->forward_inputs[i]);
        }
        in.push_back(f->forward_inputs[i]);
        continue;
      }
      if (i < f->forward_inputs.size()) check_unchanged(*f, i, x->data, f->forward_inputs[i]);
      in.push_back(x->data);
    }
    if (unchained) continue;
    // Nothing wants a gradient from this node: no input, no parameter.
    if (!f->inputs.empty() && f->inputs.size() <= 64 && mask == 0 && !f->has_parameters()) continue;
    if (outer)  // (each lock() is an atomic read-modify-write: only where it can refuse)
      for (size_t i = 0; i < f->outputs.size(); ++i)
        if (VarPtr y = f->outputs[i].lock())
          refuse_if_owned(y->grad_epoch, outer, "backward", [&] {
            return "the gradient of output " + std::to_string(i) + " of '" + f->name() + "'";
          });
    f->input_grad_mask = f->inputs.size() <= 64 ? mask : ~uint64_t{0};
    for (size_t i = 0; i < f->outputs.size(); ++i)
      gouts.push_back(output_grad(*f, i, epoch, retain_grad, root));
    running.pass.node = f.get();

    xs.assign(f->inputs.begin(), f->inputs.end());
    Arrays gxs;
    try {
      gxs = f->backward(in, gouts);
    } catch (...) {  // the gradients go back where they were
      for (size_t i = 0; i < f->outputs.size(); ++i)
        if (VarPtr y = f->outputs[i].lock())
          if (y->grad_epoch == epoch && !y->grad.defined()) y->grad = gouts[i];
      throw;
    }
    if (gxs.size() != xs.size())
      fail(CH_ERR_CALLBACK, "function '", f->name(), "' backward returned ", gxs.size(),
           " gradients for ", xs.size(), " inputs");
    for (size_t i = 0; i < gxs.size(); ++i)
      if (gxs[i].defined()) check_grad(*f, i, gxs[i], in[i]);

    if (!retain_grad)
      for (auto& w : f->outputs)
        if (VarPtr y = w.lock())
          if (y != root) y->grad = Array();

    for (size_t i = 0; i < gxs.size(); ++i) {
      if (!gxs[i].defined() || !xs[i]->requires_grad) continue;
      VariableImpl& x = *xs[i];
      accumulate(*f, i, x, std::move(gxs[i]), epoch, outer);
      if (x.creator && x.creator->visit_epoch != epoch) push(x.creator);
    }
    xs.clear();  // no reference outlives this node's step
  }
}

}  // namespace chainerc
