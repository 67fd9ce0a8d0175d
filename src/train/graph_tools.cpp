// Graph tools: DOT export of a graph and forward on plain arrays (see graph_tools.h).
#include "train/graph_tools.h"

#include <cstring>
#include <mutex>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "core/dtype.h"
#include "core/error.h"

namespace chainerc {
namespace {

// A DOT double-quoted string: quotes and backslashes escaped, newlines as \n.
std::string quoted(const std::string& s) {
  std::string r = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      r += '\\';
      r += c;
    } else if (c == '\n') {
      r += "\\n";
    } else {
      r += c;
    }
  }
  return r + "\"";
}

std::string describe(const DType dtype, const Shape& shape) {
  return shape.to_string() + ", " + dtype_name(dtype);
}

class DotWriter {
 public:
  explicit DotWriter(const GraphDotOptions& o) : opt_(o) {}

  std::string run(const std::vector<VarPtr>& outputs) {
    // Variable data may be replaced by a placeholder on another thread
    // (handle release); read dtypes and shapes under that lock.
    std::lock_guard<std::mutex> lock(variable_release_mutex());
    std::vector<const VariableImpl*> vstack;
    for (size_t i = 0; i < outputs.size(); ++i) {
      const VariableImpl* v = outputs[i].get();
      std::string name = i < opt_.output_names.size() ? opt_.output_names[i] : std::string();
      var_node(v, name);
      vstack.push_back(v);
    }
    std::vector<const Function*> fstack;
    while (!vstack.empty() || !fstack.empty()) {
      if (!vstack.empty()) {
        const VariableImpl* v = vstack.back();
        vstack.pop_back();
        const Function* f = v->creator.get();
        if (!f) continue;
        bool fresh = !fids_.count(f);
        edge(func_node(f), vids_.at(v));
        if (fresh) fstack.push_back(f);
        continue;
      }
      const Function* f = fstack.back();
      fstack.pop_back();
      const std::string& fid = fids_.at(f);
      for (const VarPtr& x : f->inputs) {
        if (!x) continue;  // unchained
        bool fresh = !vids_.count(x.get());
        edge(var_node(x.get(), ""), fid);
        if (fresh) vstack.push_back(x.get());
      }
      if (opt_.show_parameters && f->parameters) {
        for (const Parameter& p : *f->parameters) {
          const void* key = p.param.raw() ? p.param.raw() : static_cast<const void*>(&p);
          auto it = pids_.find(key);
          std::string pid;
          if (it == pids_.end()) {
            pid = "p" + std::to_string(pids_.size());
            pids_.emplace(key, pid);
            nodes_ << "  " << pid << " [label="
                   << quoted(p.name + "\n" + describe(p.param.dtype(), p.param.shape()))
                   << ",shape=\"oval\",style=\"filled\",fillcolor=\"#e8e8e8\"];\n";
          } else {
            pid = it->second;
          }
          edge(pid, fid);
        }
      }
    }
    std::ostringstream out;
    out << "digraph graphname {\n  rankdir=" << opt_.rankdir << ";\n"
        << nodes_.str() << edges_.str() << "}\n";
    return out.str();
  }

 private:
  const std::string& var_node(const VariableImpl* v, const std::string& name) {
    auto it = vids_.find(v);
    if (it != vids_.end()) return it->second;
    std::string id = "v" + std::to_string(vids_.size());
    std::string label = describe(v->data.dtype(), v->data.shape());
    if (!name.empty()) label = name + "\n" + label;
    nodes_ << "  " << id << " [label=" << quoted(label) << ",shape=\"oval\"];\n";
    return vids_.emplace(v, id).first->second;
  }
  const std::string& func_node(const Function* f) {
    auto it = fids_.find(f);
    if (it != fids_.end()) return it->second;
    std::string id = "f" + std::to_string(fids_.size());
    nodes_ << "  " << id << " [label=" << quoted(f->name())
           << ",shape=\"box\",style=\"filled\",fillcolor=\"#c6dbef\"];\n";
    return fids_.emplace(f, id).first->second;
  }
  void edge(const std::string& from, const std::string& to) {
    if (edge_set_.insert(from + "->" + to).second) edges_ << "  " << from << " -> " << to << ";\n";
  }

  const GraphDotOptions& opt_;
  std::unordered_map<const VariableImpl*, std::string> vids_;
  std::unordered_map<const Function*, std::string> fids_;
  std::unordered_map<const void*, std::string> pids_;
  std::unordered_set<std::string> edge_set_;
  std::ostringstream nodes_, edges_;
};

bool same_array(const Array& a, const Array& b) {
  return a.raw() == b.raw() && a.dtype() == b.dtype() && a.shape() == b.shape() &&
         a.device() == b.device();
}

bool has_memory(const Array& a) { return a.raw() != nullptr || a.size() == 0; }

// Whether backward may still run through the recorded application f.
bool live_node(const Function& f) {
  if (!f.applied) return false;
  for (const auto& w : f.outputs)
    if (VarPtr y = w.lock())
      if (y->creator.get() == &f) return true;
  return false;
}

void check_devices(const Function& f, const Arrays& in) {
  if (!f.spans_devices()) require_one_device(f, in);  // as apply_function does
}

}  // namespace

std::string graph_dot(const std::vector<VarPtr>& outputs, const GraphDotOptions& options) {
  static const char* const dirs[] = {"TB", "BT", "LR", "RL"};
  bool ok = false;
  for (const char* d : dirs) ok = ok || options.rankdir == d;
  if (!ok)
    fail(CH_ERR_INVALID_ARGUMENT, "graph_dot: rankdir is \"", options.rankdir,
         "\"; use TB, BT, LR or RL");
  return DotWriter(options).run(outputs);
}

Arrays forward_on_arrays(const FuncPtr& f, const Arrays& inputs, bool user_function) {
  for (size_t i = 0; i < inputs.size(); ++i)
    if (!has_memory(inputs[i]))
      fail(CH_ERR_GRAPH, f->name(), ": input ", i, " (a ", inputs[i].describe(),
           ") has no data (it was released)");
  check_devices(*f, inputs);
  // User functions: a fresh application of the same object, so the node's
  // saved arrays and user data stay as backward needs them.
  if (user_function) {
    FuncPtr node = f->clone();
    return node->forward(inputs);
  }
  if (!f->applied)
    fail(CH_ERR_INVALID_ARGUMENT, f->name(),
         ": a built-in function object that was never applied; call forward on an application "
         "(a variable's creator)");
  const size_t n = f->inputs.size();
  if (inputs.size() != n)
    fail(CH_ERR_INVALID_ARGUMENT, f->name(), ": takes ", n, " input", n == 1 ? "" : "s", ", got ",
         inputs.size());
  if (!live_node(*f)) return f->forward(inputs);  // nothing will read its state again

  // A built-in keeps what its backward needs in members that forward
  // overwrites. Recompute them afterwards from the node's own inputs (as
  // backward would read them), unless forward just ran on exactly those.
  Arrays own(n);
  {
    std::lock_guard<std::mutex> lock(variable_release_mutex());
    for (size_t i = 0; i < n; ++i) {
      const Array* a = i < f->forward_inputs.size() && has_memory(f->forward_inputs[i])
                           ? &f->forward_inputs[i]
                           : nullptr;
      const VarPtr& x = f->inputs[i];
      if (!a && x && !x->data_released && has_memory(x->data)) a = &x->data;
      if (!a)
        fail(CH_ERR_GRAPH, f->name(), ": input ", i,
             " of this graph node has no data any more (it was released or unchained), so the "
             "node could not keep what its backward needs after running forward again; keep a "
             "handle to its input variables");
      own[i] = *a;
    }
  }
  if (std::strcmp(f->name(), "Dropout") == 0)
    fail(CH_ERR_GRAPH, f->name(),
         ": draws a new random mask at every forward, so running it again would change the mask "
         "its backward uses; apply dropout again instead (or release the graph first)");
  bool same = true;
  for (size_t i = 0; i < n; ++i) same = same && same_array(own[i], inputs[i]);
  Arrays out = f->forward(inputs);
  if (!same) f->forward(own);
  return out;
}

}  // namespace chainerc
