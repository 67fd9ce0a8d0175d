// repeat and tile (Chainer 7's F.repeat, F.tile): strided gathers with zero
// strides over a split shape, then reshaped (a per-element repeats list is a
// gather through an index array). Their backward is the scatter-add (the
// repeated elements' gradients summed), whose backward is the gather again.
// Any dtype.
#include <vector>

#include "ops/graph_ops.h"
#include "ops/op_util.h"
#include "ops/ops.h"

namespace chainerc::ops {

VarPtr repeat(const VarPtr& x0, const int32_t* repeats, int32_t nrepeats, const int32_t* axis,
              int32_t naxis) {
  if (nrepeats < 1 || !repeats)
    fail(CH_ERR_INVALID_ARGUMENT, "repeat: no repeats given (nrepeats ", nrepeats, ")");
  if (naxis < 0 || naxis > 1 || (naxis && !axis))
    fail(CH_ERR_INVALID_ARGUMENT, "repeat: naxis ", naxis, " (with axis ", axis ? "given" : "NULL",
         "); 0 (None: x flattened) or 1 expected");
  for (int32_t i = 0; i < nrepeats; ++i)
    if (repeats[i] < 0)
      fail(CH_ERR_INVALID_ARGUMENT, "repeat: repeats ", repeats[i], " (element ", i,
           ") is negative");
  const VarPtr x = naxis ? x0 : flatten(x0);
  const Shape& s = x->data.shape();
  if (s.ndim() == 0) fail(CH_ERR_SHAPE, "repeat: x is 0-d");
  const int32_t a = naxis ? normalize_axis(axis[0], s.ndim(), "repeat") : 0;
  const int64_t n = s[a];
  int64_t xst[CH_MAX_NDIM] = {};
  contiguous_strides(s, xst);
  if (nrepeats == 1) {
    if (s.ndim() >= CH_MAX_NDIM)
      fail(CH_ERR_SHAPE, "repeat: x of shape ", s.to_string(), " has ", CH_MAX_NDIM, " axes");
    // (..., n, r, ...) reading x's element along the new axis r times.
    kernels::StridedView v;
    Shape split, out;
    int32_t o = 0;
    for (int32_t d = 0; d < s.ndim(); ++d) {
      split.push_back(s[d]);
      v.stride[o++] = xst[d];
      out.push_back(d == a ? s[d] * repeats[0] : s[d]);
      if (d == a) {
        split.push_back(repeats[0]);
        v.stride[o++] = 0;
      }
    }
    return reshape(strided_gather(x, v, split, Array()), out);
  }
  if (nrepeats != n)
    fail(CH_ERR_INVALID_ARGUMENT, "repeat: ", nrepeats, " repeats given for axis ",
         naxis ? axis[0] : 0, " of extent ", n, "; 1 or ", n, " expected");
  std::vector<int32_t> idx;
  for (int64_t i = 0; i < n; ++i)
    for (int32_t k = 0; k < repeats[i]; ++k) idx.push_back(static_cast<int32_t>(i));
  const Array index = Array::from_host(DType::Int32, Shape{static_cast<int64_t>(idx.size())},
                                       idx.data(), x->data.device());
  kernels::StridedView v;
  Shape out = s;
  out[a] = static_cast<int64_t>(idx.size());
  for (int32_t d = 0; d < s.ndim(); ++d) v.stride[d] = d == a ? 0 : xst[d];
  v.index_stride[a] = 1;
  v.index_scale = xst[a];
  v.index_extent = n;
  return strided_gather(x, v, out, index);
}

VarPtr tile(const VarPtr& x, const int32_t* reps, int32_t nreps) {
  if (nreps < 1 || !reps) fail(CH_ERR_INVALID_ARGUMENT, "tile: no reps given (nreps ", nreps, ")");
  for (int32_t i = 0; i < nreps; ++i)
    if (reps[i] < 0)
      fail(CH_ERR_INVALID_ARGUMENT, "tile: reps ", reps[i], " (element ", i, ") is negative");
  const Shape& s0 = x->data.shape();
  const int32_t nd = std::max(s0.ndim(), nreps);
  if (2 * nd > CH_MAX_NDIM)
    fail(CH_ERR_UNSUPPORTED, "tile: ", nd, " axes; at most ", CH_MAX_NDIM / 2, " are supported");
  // x and reps both promoted to nd axes with leading ones (NumPy's tile).
  Shape s;
  for (int32_t d = 0; d < nd - s0.ndim(); ++d) s.push_back(1);
  for (int32_t d = 0; d < s0.ndim(); ++d) s.push_back(s0[d]);
  int64_t xst[CH_MAX_NDIM] = {};
  contiguous_strides(s, xst);
  kernels::StridedView v;
  Shape split, out;
  for (int32_t d = 0; d < nd; ++d) {
    const int64_t r = d < nd - nreps ? 1 : reps[d - (nd - nreps)];
    split.push_back(r);
    v.stride[2 * d] = 0;
    split.push_back(s[d]);
    v.stride[2 * d + 1] = xst[d];
    out.push_back(r * s[d]);
  }
  return reshape(strided_gather(x, v, split, Array()), out);
}

}  // namespace chainerc::ops
