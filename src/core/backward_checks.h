// Checks both backward engines (backward.cpp, graph_backward.cpp) make on the
// arrays a node's backward takes and gives.
#pragma once

#include <cstddef>

#include "error.h"
#include "variable.h"

namespace chainerc {

// Error(CH_ERR_GRAPH) naming `who` when a backward() pass running on this
// thread (whose callback called `who`) still owns x's gradient (backward.cpp).
void refuse_if_a_pass_owns(const VariableImpl& x, const char* who);

// Input i's gradient must be like the input.
inline void check_grad(const Function& f, size_t i, const Array& gx, const Array& x) {
  if (gx.dtype() != x.dtype() || gx.shape() != x.shape() || gx.device() != x.device())
    fail(CH_ERR_CALLBACK, "function '", f.name(), "' backward returned a gradient for input ", i,
         " that is a ", gx.describe(), "; the input is a ", x.describe());
}

// Output i's gradient must be like what forward made. A grad the user set was
// checked against the output's data, which ch_variable_set_data may have
// replaced since forward, and the creator's backward reads it against
// forward's shape.
inline void check_output_grad(const Function& f, size_t i, const Array& gy) {
  const OutputInfo& info = f.output_info[i];
  if (gy.dtype() != info.dtype || gy.shape() != info.shape || gy.device() != info.device)
    fail(CH_ERR_SHAPE, "backward: the gradient of output ", i, " of '", f.name(), "' is a ",
         gy.describe(), " but forward made a ", dtype_name(info.dtype), " array of shape ",
         info.shape.to_string(), " on ", info.device.to_string(),
         " (ch_variable_set_data replaced the output's data)");
}

}  // namespace chainerc
