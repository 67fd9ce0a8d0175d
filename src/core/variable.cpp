#include "variable.h"

#include <algorithm>
#include <unordered_set>

#include "error.h"
#include "grad_mode.h"

namespace chainerc {

// Destroying the last output of a long chain would recurse once per node
// (variable -> creator -> inputs -> their creators ...). Instead, creators
// released by a variable go to a per-thread list drained by a loop, so the
// stack depth stays constant however long the chain.
namespace {
// Set when this thread's list is destroyed at thread exit. A plain bool has no
// destructor, so it stays readable while other thread-locals (an error
// payload holding a graph, say) are destroyed after the list.
thread_local bool t_defer_list_gone = false;

struct DeferList {
  std::vector<FuncPtr> pending;
  bool draining = false;
  ~DeferList() { t_defer_list_gone = true; }
};
}  // namespace

void defer_destroy(FuncPtr&& f) noexcept {
  if (!f) return;
  if (f.use_count() > 1 || t_defer_list_gone) {  // frees nothing, or the thread is exiting
    f.reset();
    return;
  }
  thread_local DeferList list;
  try {
    list.pending.push_back(std::move(f));
  } catch (...) {
    f.reset();  // no memory to defer: destroy now (recursion is bounded by what memory allowed)
    return;
  }
  if (list.draining) return;
  list.draining = true;
  while (!list.pending.empty()) {
    FuncPtr next = std::move(list.pending.back());
    list.pending.pop_back();
    next.reset();  // may push more onto the list
  }
  list.draining = false;
}

VariableImpl::~VariableImpl() { defer_destroy(std::move(creator)); }

namespace {
// One consumer, and one data-reading consumer, in VariableImpl::consumer_counts.
constexpr uint64_t kConsumer = 1, kDataReader = uint64_t{1} << 32;
// Read-modify-write: a handle released on a finalizer thread may destroy a
// node (and so count down its inputs) while the owning thread applies
// functions to the same inputs.
void count_consumer(VariableImpl& x, bool reads_data, bool add) noexcept {
  const uint64_t delta = kConsumer + (reads_data ? kDataReader : 0);
  if (add)
    x.consumer_counts.fetch_add(delta, std::memory_order_acq_rel);
  else
    x.consumer_counts.fetch_sub(delta, std::memory_order_acq_rel);
}

// Undo what apply_function counted on the inputs of a recorded node.
void drop_input_counts(Function& f) noexcept {
  if (!f.counted_as_consumer) return;
  for (size_t i = 0; i < f.inputs.size(); ++i)
    if (f.inputs[i]) count_consumer(*f.inputs[i], f.retains_data_of(i), false);
  f.counted_as_consumer = false;
}
}  // namespace

std::mutex& variable_release_mutex() {
  static std::mutex* m = new std::mutex;  // never destroyed: handles may die at exit
  return *m;
}

namespace {
// Nothing but the handle being destroyed and the consumers refers to v.
bool releasable(const VariableImpl& v, long use_count) noexcept {
  if (!v.made_by_function.load(std::memory_order_acquire)) return false;
  const uint64_t c = v.consumer_counts.load(std::memory_order_acquire);
  const uint64_t consumers = c & (kDataReader - 1), readers = c >> 32;
  return consumers != 0 && readers == 0 && static_cast<uint64_t>(use_count) == consumers + 1;
}
}  // namespace

void variable_handle_destroyed(const std::shared_ptr<void>& doomed) noexcept {
  VariableImpl& v = *static_cast<VariableImpl*>(doomed.get());
  if (!releasable(v, doomed.use_count())) return;  // most variables: decided without the lock
  // The data goes after the lock: freeing it may run a wrapped buffer's
  // release callback, which may release another variable (and so come back
  // here) or call anything else in the library.
  Array old;
  {
    std::lock_guard<std::mutex> lock(variable_release_mutex());
    if (!releasable(v, doomed.use_count()) || v.data_released || !v.data.defined()) return;
    try {
      Array placeholder = Array::placeholder_like(v.data);
      old = std::move(v.data);
      v.data = std::move(placeholder);
      v.data_released = true;
    } catch (...) {
      // no memory for the placeholder: keep the data
    }
  }
}

Function::~Function() { drop_input_counts(*this); }

void Function::unchain() {
  for (auto& w : outputs)
    if (VarPtr y = w.lock())
      if (y->creator.get() == this) y->creator.reset();
  // Keep the count (graph inspection still reports the arity); drop the links.
  drop_input_counts(*this);
  // Letting go of an input may run release callbacks that inspect or unchain
  // this very node: each link is null before what it held goes (reset), and
  // the saved arrays leave the node whole before any of them goes (clear()
  // would destroy them while the vector still counts them).
  for (VarPtr& x : inputs) x.reset();
  Arrays saved;
  saved.swap(forward_inputs);
}

namespace {
// Every input and parameter of `f` on one device (CH_ERR_DEVICE naming the
// first that differs): a function's kernels run on the device of its arrays.
// Labels are made only for the message, so the common case costs a compare
// per array.
std::string array_label(const Function& f, size_t k, size_t n_inputs) {
  if (k < n_inputs) return "input " + std::to_string(k);
  const Parameter& p = (*f.parameters)[(k - n_inputs) / 2];
  return ((k - n_inputs) % 2 ? "the gradient of parameter '" : "parameter '") + p.name + "'";
}

}  // namespace

void require_one_device(const Function& f, const Arrays& in) {
  const size_t n_params = f.parameters ? f.parameters->size() : 0;
  const size_t total = in.size() + 2 * n_params;
  auto at = [&](size_t k) -> const Array& {
    if (k < in.size()) return in[k];
    const Parameter& p = (*f.parameters)[(k - in.size()) / 2];
    return (k - in.size()) % 2 ? p.grad : p.param;
  };
  size_t first = total;
  for (size_t k = 0; k < total; ++k) {
    const Array& a = at(k);
    if (!a.defined()) continue;
    if (first == total) {
      first = k;
    } else if (a.device() != at(first).device()) {
      fail(CH_ERR_DEVICE, f.name(), ": ", array_label(f, k, in.size()), " is on ",
           a.device().to_string(), " but ", array_label(f, first, in.size()), " is on ",
           at(first).device().to_string(),
           "; a function's arrays must be on one device (move them with copy or "
           "ch_array_to_device)");
    }
  }
}

std::vector<VarPtr> apply_function(const FuncPtr& f, std::vector<VarPtr> inputs) {
  if (f->applied)
    fail(CH_ERR_GRAPH, "function '", f->name(), "' is a graph node that was already applied");
  bool vol = !inputs.empty() && inputs[0]->is_volatile;
  for (size_t i = 1; i < inputs.size(); ++i)
    if (inputs[i]->is_volatile != vol)
      fail(CH_ERR_GRAPH, f->name(), ": inputs mix volatile and non-volatile variables (input 0 is ",
           vol ? "" : "not ", "volatile, input ", i, " is ", inputs[i]->is_volatile ? "" : "not ",
           "volatile)");
  Arrays in;
  in.reserve(inputs.size());
  for (const VarPtr& x : inputs) {
    if (x->data_released && f->reads_input_data())
      fail(CH_ERR_GRAPH, f->name(), ": input ", in.size(),
           " is a variable whose data was released ",
           "(no handle referred to it and no function needed it for backward)");
    in.push_back(x->data);
  }
  if (!f->spans_devices()) require_one_device(*f, in);
  Arrays out = f->forward(in);

  std::vector<VarPtr> outs;
  outs.reserve(out.size());
  for (Array& o : out) outs.push_back(std::make_shared<VariableImpl>(std::move(o), vol));
  if (vol || !backprop_enabled()) return outs;

  int64_t rank = 0;
  // Parameters (and functions of no input, which exist for theirs) need
  // backward whatever the inputs say.
  bool requires_grad = inputs.empty() || f->has_parameters();
  for (const VarPtr& x : inputs) {
    rank = std::max(rank, x->rank);
    requires_grad = requires_grad || x->requires_grad;
  }
  f->rank = rank;
  for (size_t i = 0; i < in.size(); ++i) {
    const bool retained = i >= 64 || f->retains_input(i);
    if (retained)
      f->retained_mask |= i < 64 ? uint64_t{1} << i : 0;
    else
      in[i] = Array::placeholder_like(in[i]);  // the node must not keep the data alive
    count_consumer(*inputs[i], retained, true);
  }
  f->counted_as_consumer = true;
  f->forward_inputs = std::move(in);
  f->inputs = std::move(inputs);  // the caller's list: no copy for the usual temporary
  f->outputs.reserve(outs.size());
  f->output_info.reserve(outs.size());
  for (const VarPtr& y : outs) {
    y->creator = f;
    y->made_by_function.store(true, std::memory_order_relaxed);
    y->rank = rank + 1;
    y->requires_grad = requires_grad;
    f->outputs.emplace_back(y);
    f->output_info.push_back(OutputInfo{y->data.dtype(), y->data.shape(), y->data.device()});
  }
  f->applied = true;
  return outs;
}

VarPtr apply1(const FuncPtr& f, std::vector<VarPtr> inputs) {
  std::vector<VarPtr> outs = apply_function(f, std::move(inputs));
  if (outs.size() != 1)
    fail(CH_ERR_INTERNAL, f->name(), ": expected one output, got ", outs.size());
  return std::move(outs[0]);
}

void unchain_backward(const VarPtr& v) {
  if (!v->creator) return;
  std::vector<FuncPtr> stack{v->creator};
  std::unordered_set<const Function*> seen{v->creator.get()};
  while (!stack.empty()) {
    FuncPtr f = std::move(stack.back());
    stack.pop_back();
    for (const VarPtr& x : f->inputs)
      if (x && x->creator && seen.insert(x->creator.get()).second) stack.push_back(x->creator);
    f->unchain();
  }
}

}  // namespace chainerc
