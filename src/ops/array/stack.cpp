// stack (Chainer 7's F.stack): the inputs each given a new axis `axis`
// (expand_dims) and concatenated along it; and split_axis (F.split_axis): x
// cut along an axis into sections or at indices, through the split that is
// concat's backward. Both differentiable twice (their backwards are concat
// and split). Any dtype.
#include <vector>

#include "ops/graph_ops.h"
#include "ops/op_util.h"
#include "ops/ops.h"

namespace chainerc::ops {

VarPtr stack(const std::vector<VarPtr>& xs, int32_t axis) {
  if (xs.empty()) fail(CH_ERR_INVALID_ARGUMENT, "stack: no inputs");
  const Shape& s0 = xs[0]->data.shape();
  const int32_t a = normalize_axis(axis, s0.ndim() + 1, "stack");
  std::vector<VarPtr> e;
  e.reserve(xs.size());
  for (size_t i = 0; i < xs.size(); ++i) {
    if (xs[i]->data.shape() != s0)
      fail(CH_ERR_SHAPE, "stack: input ", i, " has shape ", xs[i]->data.shape().to_string(),
           " and input 0 has shape ", s0.to_string(), "; they must be equal");
    e.push_back(expand_dims(xs[i], a));
  }
  return concat(e, a);
}

std::vector<VarPtr> split_axis(const VarPtr& x, const int64_t* indices, int32_t nindices,
                               int32_t sections, int32_t axis) {
  const Shape& s = x->data.shape();
  if (s.ndim() == 0)
    fail(CH_ERR_SHAPE, "split_axis: x is 0-d; an array with at least one axis is expected");
  const int32_t a = normalize_axis(axis, s.ndim(), "split_axis");
  const int64_t n = s[a];
  std::vector<int64_t> bounds{0};
  if (indices) {
    if (nindices < 0)
      fail(CH_ERR_INVALID_ARGUMENT, "split_axis: nindices ", nindices, " is negative");
    for (int32_t i = 0; i < nindices; ++i) {
      int64_t b = indices[i];
      if (b < 0) b = b + n < 0 ? 0 : b + n;
      if (b > n) b = n;
      if (b < bounds.back())
        fail(CH_ERR_INVALID_ARGUMENT, "split_axis: the indices must be sorted; index ", indices[i],
             " (element ", i, ") comes after ", indices[i - 1]);
      bounds.push_back(b);
    }
  } else {
    if (sections <= 0)
      fail(CH_ERR_INVALID_ARGUMENT, "split_axis: sections ", sections, " must be positive");
    if (n % sections)
      fail(CH_ERR_INVALID_ARGUMENT, "split_axis: axis ", axis, " of extent ", n,
           " cannot be split into ", sections, " equal sections");
    for (int32_t i = 1; i < sections; ++i) bounds.push_back(n / sections * i);
  }
  bounds.push_back(n);
  std::vector<Shape> shapes;
  for (size_t i = 0; i + 1 < bounds.size(); ++i) {
    Shape p = s;
    p[a] = bounds[i + 1] - bounds[i];
    shapes.push_back(p);
  }
  return split_axis(x, a, std::move(shapes));
}

}  // namespace chainerc::ops
