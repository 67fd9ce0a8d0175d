// expand_dims, squeeze, flatten and swapaxes (Chainer 7's functions of these
// names): reshapes and a transpose of x, so their backward (and double
// backward) is reshape's and transpose's. Any dtype.
#include <vector>

#include "ops/op_util.h"
#include "ops/ops.h"

namespace chainerc::ops {

VarPtr expand_dims(const VarPtr& x, int32_t axis) {
  const Shape& s = x->data.shape();
  if (s.ndim() >= CH_MAX_NDIM)
    fail(CH_ERR_SHAPE, "expand_dims: x of shape ", s.to_string(), " already has ", CH_MAX_NDIM,
         " axes, the most an array can have");
  const int32_t a = normalize_axis(axis, s.ndim() + 1, "expand_dims");
  Shape out;
  for (int32_t d = 0; d < a; ++d) out.push_back(s[d]);
  out.push_back(1);
  for (int32_t d = a; d < s.ndim(); ++d) out.push_back(s[d]);
  return reshape(x, out);
}

VarPtr squeeze(const VarPtr& x, const int32_t* axis, int32_t naxis) {
  const Shape& s = x->data.shape();
  if (naxis < 0 || naxis > CH_MAX_NDIM)
    fail(CH_ERR_INVALID_ARGUMENT, "squeeze: naxis ", naxis, " is out of range [0, ", CH_MAX_NDIM,
         "]");
  if (naxis && !axis) fail(CH_ERR_INVALID_ARGUMENT, "squeeze: axis is NULL with naxis ", naxis);
  std::vector<bool> drop(static_cast<size_t>(s.ndim()), false);
  if (naxis == 0) {
    for (int32_t d = 0; d < s.ndim(); ++d) drop[static_cast<size_t>(d)] = s[d] == 1;
  } else {
    for (int32_t i = 0; i < naxis; ++i) {
      const int32_t a = normalize_axis(axis[i], s.ndim(), "squeeze");
      if (s[a] != 1)
        fail(CH_ERR_SHAPE, "squeeze: axis ", axis[i], " of x of shape ", s.to_string(),
             " has extent ", s[a], ", not 1");
      if (drop[static_cast<size_t>(a)])
        fail(CH_ERR_INVALID_ARGUMENT, "squeeze: axis ", axis[i], " is repeated");
      drop[static_cast<size_t>(a)] = true;
    }
  }
  Shape out;
  for (int32_t d = 0; d < s.ndim(); ++d)
    if (!drop[static_cast<size_t>(d)]) out.push_back(s[d]);
  return reshape(x, out);
}

VarPtr flatten(const VarPtr& x) { return reshape(x, Shape{x->data.size()}); }

VarPtr swapaxes(const VarPtr& x, int32_t axis1, int32_t axis2) {
  const int32_t nd = x->data.ndim();
  const int32_t a = normalize_axis(axis1, nd, "swapaxes"),
                b = normalize_axis(axis2, nd, "swapaxes");
  std::vector<int32_t> perm(static_cast<size_t>(nd));
  for (int32_t d = 0; d < nd; ++d) perm[static_cast<size_t>(d)] = d;
  std::swap(perm[static_cast<size_t>(a)], perm[static_cast<size_t>(b)]);
  return transpose(x, perm.data(), nd);
}

}  // namespace chainerc::ops
