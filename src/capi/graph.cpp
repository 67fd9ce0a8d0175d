// C API: the graph as Graphviz DOT (ch_variable_graph_dot) and a function's
// forward on plain arrays (ch_function_forward).
#include <cstdlib>
#include <cstring>

#include "api.h"
#include "capi/callback_function.h"
#include "train/graph_tools.h"

using namespace chainerc;
using namespace chainerc::capi;

extern "C" {

ch_status ch_variable_graph_dot(char** out, ch_variable* const* outputs, size_t n_outputs,
                                const ch_graph_dot_options* options) {
  CH_API_BEGIN
  require_out(out, __func__);
  if (n_outputs == 0) fail(CH_ERR_INVALID_ARGUMENT, __func__, ": n_outputs is 0");
  if (!outputs)
    fail(CH_ERR_INVALID_ARGUMENT, __func__, ": outputs is NULL with n_outputs ", n_outputs);
  GraphDotOptions opt;
  if (options) {
    if (options->version < 1 || options->version > CH_GRAPH_DOT_OPTIONS_VERSION)
      fail(CH_ERR_INVALID_ARGUMENT, __func__, ": options->version is ", options->version,
           "; this library knows versions 1..", CH_GRAPH_DOT_OPTIONS_VERSION);
    opt.show_parameters = options->hide_parameters == 0;
    if (options->rankdir) opt.rankdir = options->rankdir;
    if (options->output_names)
      for (size_t i = 0; i < n_outputs; ++i)
        opt.output_names.emplace_back(options->output_names[i] ? options->output_names[i] : "");
  }
  std::vector<VarPtr> vs;
  vs.reserve(n_outputs);
  for (size_t i = 0; i < n_outputs; ++i) {
    std::string arg = "outputs[" + std::to_string(i) + "]";
    vs.push_back(variable_of(outputs[i], __func__, arg.c_str()));
  }
  std::string dot = graph_dot(vs, opt);
  char* s = static_cast<char*>(std::malloc(dot.size() + 1));
  if (!s) fail(CH_ERR_OUT_OF_MEMORY, __func__, ": ", dot.size() + 1, " bytes for the DOT text");
  std::memcpy(s, dot.c_str(), dot.size() + 1);
  *out = s;
  CH_API_END
}

void ch_string_free(char* s) { std::free(s); }

ch_status ch_function_forward(ch_function* function, ch_array* const* inputs, size_t n_inputs,
                              ch_array** outputs, size_t capacity, size_t* n_outputs) {
  CH_API_BEGIN
  if (n_outputs) *n_outputs = 0;
  if (capacity && !outputs)
    fail(CH_ERR_INVALID_ARGUMENT, __func__, ": outputs is NULL with capacity ", capacity);
  for (size_t i = 0; i < capacity; ++i) outputs[i] = nullptr;
  FuncPtr f = function_of(function, __func__, "function");
  if (n_inputs && !inputs)
    fail(CH_ERR_INVALID_ARGUMENT, __func__, ": inputs is NULL with n_inputs ", n_inputs);
  Arrays xs;
  xs.reserve(n_inputs);
  for (size_t i = 0; i < n_inputs; ++i) {
    std::string arg = "inputs[" + std::to_string(i) + "]";
    xs.push_back(array_of(inputs[i], __func__, arg.c_str()));
  }
  Arrays ys =
      forward_on_arrays(f, xs, dynamic_cast<const CallbackFunction*>(f.get()) != nullptr);
  size_t n = std::min(capacity, ys.size());
  try {
    for (size_t i = 0; i < n; ++i) outputs[i] = new_array_handle(ys[i]);
  } catch (...) {
    for (size_t i = 0; i < n; ++i) {
      ch_array_release(outputs[i]);
      outputs[i] = nullptr;
    }
    throw;
  }
  if (n_outputs) *n_outputs = ys.size();
  CH_API_END
}

}  // extern "C"
