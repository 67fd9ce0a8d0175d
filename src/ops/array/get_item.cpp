// get_item (Chainer 7's F.get_item, Variable.__getitem__) and scatter_add
// (F.scatter_add(a, slices, b)): NumPy's basic indexing (integers, slices
// with any step, None, one Ellipsis) plus one int32 index array along one
// axis, resolved here into a strided view of x. get_item is a strided
// gather, whose backward is the scatter-add into zeros (and that one's is
// the gather: twice differentiable); scatter_add's backward is gy for a and
// gy gathered (summed to b's shape) for b. Any dtype.
#include <vector>

#include "ops/graph_ops.h"
#include "ops/op_util.h"
#include "ops/ops.h"

namespace chainerc::ops {
namespace {

struct Resolved {
  kernels::StridedView view;
  Shape shape;  // the result's
  Array index;  // on x's device, or undefined
};

// Python's slice.indices(n) and the length of the slice.
void slice_bounds(const IndexItem& it, int64_t n, const char* who, int32_t axis, int64_t* start,
                  int64_t* step, int64_t* len) {
  const int64_t st = it.step;
  if (st == 0) fail(CH_ERR_INVALID_ARGUMENT, who, ": the slice on axis ", axis, " has step 0");
  int64_t b, e;
  if (st > 0) {
    b = it.has_start ? it.start : 0;
    e = it.has_stop ? it.stop : n;
    if (b < 0) b = b + n < 0 ? 0 : b + n;
    if (b > n) b = n;
    if (e < 0) e = e + n < 0 ? 0 : e + n;
    if (e > n) e = n;
    *len = e > b ? (e - b + st - 1) / st : 0;
  } else {
    b = it.has_start ? it.start : n - 1;
    e = it.has_stop ? it.stop : -1;  // -1 here: before the first element
    if (it.has_start) {
      if (b < 0) b = b + n < 0 ? -1 : b + n;
      if (b >= n) b = n - 1;
    }
    if (it.has_stop) {
      if (e < 0) e = e + n < 0 ? -1 : e + n;
      if (e >= n) e = n - 1;
    }
    *len = b > e ? (b - e + (-st) - 1) / (-st) : 0;
  }
  *start = b;
  *step = st;
}

Resolved resolve(const Array& x, const std::vector<IndexItem>& items, const char* who) {
  const Shape& xs = x.shape();
  const int32_t nd = xs.ndim();
  int32_t consumed = 0, ellipses = 0, arrays = 0;
  for (const IndexItem& it : items) {
    if (it.kind == IndexItem::kEllipsis)
      ++ellipses;
    else if (it.kind != IndexItem::kNewAxis)
      ++consumed;
    if (it.kind == IndexItem::kArray) ++arrays;
    if (it.kind < IndexItem::kInt || it.kind > IndexItem::kArray)
      fail(CH_ERR_INVALID_ARGUMENT, who, ": index kind ", static_cast<int>(it.kind),
           " is not one of CH_INDEX_INT, _SLICE, _NEWAXIS, _ELLIPSIS, _ARRAY");
  }
  if (ellipses > 1) fail(CH_ERR_INVALID_ARGUMENT, who, ": an index can only have one Ellipsis");
  if (arrays > 1)
    fail(CH_ERR_UNSUPPORTED, who, ": ", arrays,
         " index arrays given; one integer array (along one axis) is supported");
  if (consumed > nd)
    fail(CH_ERR_INVALID_ARGUMENT, who, ": too many indices (", consumed, ") for x of shape ",
         xs.to_string());
  std::vector<IndexItem> full;
  for (const IndexItem& it : items) {
    if (it.kind == IndexItem::kEllipsis) {
      for (int32_t k = 0; k < nd - consumed; ++k) full.push_back(IndexItem{});
    } else {
      full.push_back(it);
    }
  }
  if (!ellipses)
    for (int32_t k = 0; k < nd - consumed; ++k) full.push_back(IndexItem{});

  // NumPy: with an index array, the integers are advanced indices too; when
  // they and the array are not adjacent in the key, the array's axes go first.
  bool array_first = false;
  if (arrays) {
    int32_t lo = -1, hi = -1, count = 0;
    for (size_t i = 0; i < full.size(); ++i)
      if (full[i].kind == IndexItem::kInt || full[i].kind == IndexItem::kArray) {
        if (lo < 0) lo = static_cast<int32_t>(i);
        hi = static_cast<int32_t>(i);
        ++count;
      }
    array_first = hi - lo + 1 != count;
  }
  int64_t xst[CH_MAX_NDIM] = {};
  contiguous_strides(xs, xst);
  Resolved r;
  int32_t array_dim = 0, array_ndim = 0;
  int32_t od = 0, axis = 0;
  auto add_dim = [&](int64_t extent, int64_t stride, int64_t istride) {
    if (od >= CH_MAX_NDIM)
      fail(CH_ERR_SHAPE, who, ": the result would have more than ", CH_MAX_NDIM, " axes");
    r.shape.push_back(extent);
    r.view.stride[od] = stride;
    r.view.index_stride[od] = istride;
    ++od;
  };
  for (const IndexItem& it : full) {
    if (it.kind == IndexItem::kNewAxis) {
      add_dim(1, 0, 0);
      continue;
    }
    const int64_t n = xs[axis];
    if (it.kind == IndexItem::kInt) {
      int64_t i = it.start;
      if (i < -n || i >= n)
        fail(CH_ERR_INVALID_ARGUMENT, who, ": index ", i, " is out of bounds for axis ", axis,
             " with size ", n);
      if (i < 0) i += n;
      r.view.offset += i * xst[axis];
    } else if (it.kind == IndexItem::kSlice) {
      int64_t start, step, len;
      slice_bounds(it, n, who, axis, &start, &step, &len);
      if (len > 0) r.view.offset += start * xst[axis];
      add_dim(len, step * xst[axis], 0);
    } else {  // kArray
      const Array& a = it.array;
      if (!a.defined())
        fail(CH_ERR_NULL_HANDLE, who, ": the index array of axis ", axis, " is NULL");
      if (a.dtype() != DType::Int32)
        fail(CH_ERR_DTYPE, who, ": the index array of axis ", axis, " is a ", a.describe(),
             "; int32 expected");
      const Array host = a.device() == Device{} ? a : a.to_device(Device{});
      for (int64_t k = 0; k < host.size(); ++k) {
        const auto ik = static_cast<int64_t>(host.get(k));  // int32: exact in a double
        if (ik < -n || ik >= n)
          fail(CH_ERR_INVALID_ARGUMENT, who, ": index ", ik, " (element ", k,
               " of the index array) is out of bounds for axis ", axis, " with size ", n);
      }
      r.index = a.device() == x.device() ? a : a.to_device(x.device());
      r.view.index_scale = xst[axis];
      r.view.index_extent = n;
      int64_t ast[CH_MAX_NDIM] = {};
      contiguous_strides(a.shape(), ast);
      array_dim = od;
      array_ndim = a.ndim();
      for (int32_t k = 0; k < a.ndim(); ++k) add_dim(a.shape()[k], 0, ast[k]);
    }
    ++axis;
  }
  if (array_first && array_dim > 0) {  // rotate the array's axes to the front
    Shape s;
    kernels::StridedView v = r.view;
    for (int32_t k = 0; k < array_ndim; ++k) {
      s.push_back(r.shape[array_dim + k]);
      v.stride[k] = r.view.stride[array_dim + k];
      v.index_stride[k] = r.view.index_stride[array_dim + k];
    }
    for (int32_t d = 0, o = array_ndim; d < od; ++d) {
      if (d >= array_dim && d < array_dim + array_ndim) continue;
      s.push_back(r.shape[d]);
      v.stride[o] = r.view.stride[d];
      v.index_stride[o] = r.view.index_stride[d];
      ++o;
    }
    r.shape = s;
    r.view = v;
  }
  return r;
}

class ScatterAdd final : public Function {
 public:
  explicit ScatterAdd(Resolved r) : r_(std::move(r)) {}
  const char* name() const override { return "ScatterAdd"; }
  bool retains_input(size_t) const override { return false; }  // backward reads b's shape
  Arrays forward(const Arrays& in) override {
    const Array& a = in[0];
    const Array& b = in[1];
    if (b.dtype() != a.dtype())
      fail(CH_ERR_DTYPE, "scatter_add: b is ", dtype_name(b.dtype()), " but a is ",
           dtype_name(a.dtype()));
    if (b.device() != a.device())
      fail(CH_ERR_DEVICE, "scatter_add: b is on ", b.device().to_string(), " but a is on ",
           a.device().to_string());
    if (broadcast_shapes(b.shape(), r_.shape, "scatter_add") != r_.shape)
      fail(CH_ERR_SHAPE, "scatter_add: b of shape ", b.shape().to_string(),
           " does not broadcast to the indexed shape ", r_.shape.to_string());
    Array y = a.copy();
    const Array bb = b.shape() == r_.shape ? b : broadcast_to_shape(b, r_.shape);
    kernels::scatter_add(bb, r_.view, r_.index, y);
    return {y};
  }
  Arrays backward(const Arrays& in, const Arrays& gy) override {
    Array g = Array::empty(gy[0].dtype(), r_.shape, gy[0].device());
    kernels::gather(gy[0], r_.view, r_.index, g);
    return {gy[0], sum_to_shape(g, in[1].shape())};
  }
  CH_GRAPH_BACKWARD {
    VarPtr g = strided_gather(gy[0], r_.view, r_.shape, r_.index);
    return {identity(gy[0]), sum_to(g, inputs[1]->data.shape())};
  }

 private:
  Resolved r_;
};

}  // namespace

VarPtr get_item(const VarPtr& x, const std::vector<IndexItem>& items) {
  Resolved r = resolve(x->data, items, "get_item");
  return strided_gather(x, r.view, r.shape, r.index);
}

VarPtr scatter_add(const VarPtr& a, const std::vector<IndexItem>& items, const VarPtr& b) {
  Resolved r = resolve(a->data, items, "scatter_add");
  return apply1(std::make_shared<ScatterAdd>(std::move(r)), {a, b});
}

}  // namespace chainerc::ops
