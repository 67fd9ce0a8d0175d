// C API: the array functions of issue 42 whose shim is not mechanical:
// get_item and scatter_add (ch_index keys, include/ch/index.h), stack (n
// borrowed handles), split_axis (n_out outputs) and cast (any dtype).
#include <string>
#include <vector>

#include "api.h"
#include "ops/ops.h"

using namespace chainerc;
using namespace chainerc::capi;

namespace {

std::vector<ops::IndexItem> index_items(const ch_index* index, int32_t nindex, const char* who) {
  if (nindex < 0) fail(CH_ERR_INVALID_ARGUMENT, who, ": nindex ", nindex, " is negative");
  if (nindex && !index) fail(CH_ERR_INVALID_ARGUMENT, who, ": index is NULL with nindex ", nindex);
  std::vector<ops::IndexItem> items;
  for (int32_t i = 0; i < nindex; ++i) {
    const ch_index& c = index[i];
    if (c.version < 1 || c.version > CH_INDEX_VERSION)
      fail(CH_ERR_INVALID_ARGUMENT, who, ": index[", i, "] has ch_index version ", c.version,
           "; this library knows versions 1..", CH_INDEX_VERSION,
           " (initialise with CH_INDEX_INIT)");
    if (c.kind < CH_INDEX_INT || c.kind > CH_INDEX_ARRAY)
      fail(CH_ERR_INVALID_ARGUMENT, who, ": index[", i, "] has kind ", c.kind,
           "; CH_INDEX_INT (0) to CH_INDEX_ARRAY (4) expected");
    ops::IndexItem it;
    it.kind = static_cast<ops::IndexItem::Kind>(c.kind);
    it.start = c.start;
    it.stop = c.stop;
    it.step = c.kind == CH_INDEX_SLICE && c.step == 0 ? 1 : c.step;
    it.has_start = (c.flags & CH_INDEX_HAS_START) != 0;
    it.has_stop = (c.flags & CH_INDEX_HAS_STOP) != 0;
    if (c.kind == CH_INDEX_ARRAY) {
      const std::string arg = "index[" + std::to_string(i) + "].array";
      it.array = array_of(c.array, who, arg.c_str());
    }
    items.push_back(std::move(it));
  }
  return items;
}

}  // namespace

extern "C" {

ch_status ch_functions_get_item(ch_variable** out, ch_variable* x, const ch_index* index,
                                int32_t nindex) {
  CH_API_BEGIN
  require_out(out, __func__);
  const VarPtr v = variable_of(x, __func__, "x");
  *out = new_variable_handle(ops::get_item(v, index_items(index, nindex, "get_item")));
  CH_API_END
}

ch_status ch_functions_scatter_add(ch_variable** out, ch_variable* a, const ch_index* index,
                                   int32_t nindex, ch_variable* b) {
  CH_API_BEGIN
  require_out(out, __func__);
  const VarPtr va = variable_of(a, __func__, "a"), vb = variable_of(b, __func__, "b");
  *out = new_variable_handle(ops::scatter_add(va, index_items(index, nindex, "scatter_add"), vb));
  CH_API_END
}

ch_status ch_functions_stack(ch_variable** out, ch_variable* const* xs, size_t n, int32_t axis) {
  CH_API_BEGIN
  require_out(out, __func__);
  if (n == 0) fail(CH_ERR_INVALID_ARGUMENT, __func__, ": no inputs (n is 0)");
  *out = new_variable_handle(ops::stack(variables_of(xs, n, __func__, "xs", "n"), axis));
  CH_API_END
}

ch_status ch_functions_split_axis(ch_variable** pieces, size_t n_pieces, ch_variable* x,
                                  const int64_t* indices, int32_t nindices, int32_t sections,
                                  int32_t axis) {
  CH_API_BEGIN
  if (!pieces) fail(CH_ERR_INVALID_ARGUMENT, __func__, ": pieces is NULL");
  for (size_t i = 0; i < n_pieces; ++i) pieces[i] = nullptr;
  const std::vector<VarPtr> vs =
      ops::split_axis(variable_of(x, __func__, "x"), indices, nindices, sections, axis);
  if (vs.size() != n_pieces)
    fail(CH_ERR_INVALID_ARGUMENT, __func__, ": the split gives ", vs.size(),
         " pieces but n_pieces is ", n_pieces);
  for (size_t i = 0; i < n_pieces; ++i) pieces[i] = new_variable_handle(vs[i]);
  CH_API_END
}

ch_status ch_functions_cast(ch_variable** out, ch_variable* x, ch_dtype dtype) {
  CH_API_BEGIN
  require_out(out, __func__);
  *out = new_variable_handle(ops::cast(variable_of(x, __func__, "x"), dtype_arg(dtype, __func__)));
  CH_API_END
}

}  // extern "C"
