// Graph tools for users: the computational graph behind variables as
// Graphviz DOT (Chainer's computational_graph.build_computational_graph), and
// a function node's forward run again on plain arrays (the seed's
// `y.creator.forward((x.data,))` inside numerical_grad).
#pragma once

#include <string>
#include <vector>

#include "core/variable.h"

namespace chainerc {

struct GraphDotOptions {
  bool show_parameters = true;  // parameters (W, b, ...) as named variable nodes
  std::string rankdir = "TB";   // Graphviz rankdir: TB, BT, LR or RL
  // Names shown on the output variables (same order; may be shorter).
  std::vector<std::string> output_names;
};

// DOT text of the graph from `outputs` back to its roots: variables as ovals
// labelled "name\n(shape), dtype", functions as boxes with their name, edges
// input -> function -> output. Nodes and edges appear once each, in the order
// a walk from the outputs finds them, so the text is deterministic.
std::string graph_dot(const std::vector<VarPtr>& outputs, const GraphDotOptions& options);

// Run the forward computation of `f` (a function object or a recorded
// application) on `inputs`, recording nothing, and return its outputs.
// A recorded application that backward may still use keeps its state: user
// functions run on a fresh application (clone); built-ins run on the node and
// then recompute their state from the node's own inputs. Refused (CH_ERR_GRAPH)
// where that cannot be done: an input's data was released, or the function
// draws random numbers (Dropout).
// `user_function`: f is defined by user callbacks (the C API knows), whose
// fresh application is safe to run.
Arrays forward_on_arrays(const FuncPtr& f, const Arrays& inputs, bool user_function);

}  // namespace chainerc
