// C API: lstm and BinaryHierarchicalSoftmax (the seed's functions for
// recurrent language models; EmbedID's shim is generated into functions_gen.cpp).
#include "api.h"
#include "ops/ops.h"

using namespace chainerc;
using namespace chainerc::capi;

extern "C" {

ch_status ch_functions_lstm(ch_variable** c, ch_variable** h, ch_variable* c_prev, ch_variable* x) {
  CH_API_BEGIN
  require_out(c, __func__);
  require_out(h, __func__);
  std::vector<VarPtr> ys =
      ops::lstm(variable_of(c_prev, __func__, "c_prev"), variable_of(x, __func__, "x"));
  ch_variable* hc = new_variable_handle(std::move(ys[0]));
  try {
    *h = new_variable_handle(std::move(ys[1]));
  } catch (...) {
    handle_release(hc, HandleKind::Variable, __func__);
    throw;
  }
  *c = hc;
  CH_API_END
}

ch_status ch_functions_binary_hierarchical_softmax_new(ch_function** out, int64_t in_size,
                                                       const int32_t* tree, int64_t n_internal,
                                                       ch_dtype dtype, const ch_array* initial_W) {
  CH_API_BEGIN
  require_out(out, __func__);
  const DType dt = float_dtype_arg(dtype, __func__);
  const Array* w = initial_W ? &array_of(initial_W, __func__, "initial_W") : nullptr;
  *out =
      new_function_handle(ops::binary_hierarchical_softmax_new(in_size, tree, n_internal, dt, w));
  CH_API_END
}

ch_status ch_functions_binary_hierarchical_softmax_create_huffman_tree(int32_t* tree,
                                                                       int64_t capacity,
                                                                       const double* counts,
                                                                       int64_t n_words) {
  CH_API_BEGIN
  if (!tree) fail(CH_ERR_INVALID_ARGUMENT, __func__, ": tree is NULL");
  std::vector<int32_t> t = ops::hsm_create_huffman_tree(counts, n_words);
  if (capacity < static_cast<int64_t>(t.size()))
    fail(CH_ERR_INVALID_ARGUMENT, __func__, ": capacity ", capacity, " is too small; ", n_words,
         " words need ", t.size(), " entries (2 * (n_words - 1))");
  std::copy(t.begin(), t.end(), tree);
  CH_API_END
}

}  // extern "C"
