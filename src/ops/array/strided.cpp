// The strided gather and scatter-add as differentiable functions, each the
// other's backward (so every function made of them is twice differentiable):
// the internal pieces of get_item, scatter_add, flip, tile, repeat, pad and
// select_item (ops/graph_ops.h). Any dtype.
#include "kernels/array.h"
#include "ops/graph_ops.h"
#include "ops/op_util.h"
#include "ops/ops.h"

namespace chainerc::ops {
namespace {

class Gather final : public Function {
 public:
  Gather(const kernels::StridedView& v, const Shape& shape, const Array& index)
      : view_(v), shape_(shape), index_(index) {}
  const char* name() const override { return "Gather"; }
  bool retains_input(size_t) const override { return false; }  // backward reads x's shape
  Arrays forward(const Arrays& in) override {
    Array y = Array::empty(in[0].dtype(), shape_, in[0].device());
    kernels::gather(in[0], view_, index_, y);
    return {y};
  }
  Arrays backward(const Arrays& in, const Arrays& gy) override {
    Array gx = Array::zeros(gy[0].dtype(), in[0].shape(), gy[0].device());
    kernels::scatter_add(gy[0], view_, index_, gx);
    return {gx};
  }
  CH_GRAPH_BACKWARD { return {strided_scatter(gy[0], view_, inputs[0]->data.shape(), index_)}; }

 private:
  kernels::StridedView view_;
  Shape shape_;
  Array index_;
};

class Scatter final : public Function {
 public:
  Scatter(const kernels::StridedView& v, const Shape& x_shape, const Array& index)
      : view_(v), x_shape_(x_shape), index_(index) {}
  const char* name() const override { return "Scatter"; }
  bool retains_input(size_t) const override { return false; }
  Arrays forward(const Arrays& in) override {
    Array x = Array::zeros(in[0].dtype(), x_shape_, in[0].device());
    kernels::scatter_add(in[0], view_, index_, x);
    return {x};
  }
  Arrays backward(const Arrays& in, const Arrays& gx) override {
    Array gy = Array::empty(gx[0].dtype(), in[0].shape(), gx[0].device());
    kernels::gather(gx[0], view_, index_, gy);
    return {gy};
  }
  CH_GRAPH_BACKWARD { return {strided_gather(gy[0], view_, inputs[0]->data.shape(), index_)}; }

 private:
  kernels::StridedView view_;
  Shape x_shape_;
  Array index_;
};

}  // namespace

void contiguous_strides(const Shape& s, int64_t* strides) {
  int64_t st = 1;
  for (int32_t d = s.ndim() - 1; d >= 0; --d) {
    strides[d] = st;
    st *= s[d];
  }
}

VarPtr strided_gather(const VarPtr& x, const kernels::StridedView& view, const Shape& shape,
                      const Array& index) {
  return apply1(std::make_shared<Gather>(view, shape, index), {x});
}

VarPtr strided_scatter(const VarPtr& y, const kernels::StridedView& view, const Shape& x_shape,
                       const Array& index) {
  return apply1(std::make_shared<Scatter>(view, x_shape, index), {y});
}

}  // namespace chainerc::ops
