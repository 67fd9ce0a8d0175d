// sum: y = sum of all elements (0-d), or the sum along one axis.
#include "ops/op_util.h"
#include "ops/ops.h"

namespace chainerc::ops {
namespace {

class Sum final : public Function {
 public:
  const char* name() const override { return "Sum"; }
  bool retains_input(size_t) const override { return false; }  // backward reads x's shape
  Arrays forward(const Arrays& in) override {
    check_float("sum", in[0]);
    Array y = Array::empty(in[0].dtype(), Shape{}, in[0].device());
    kernels::sum_to(in[0], y);
    return {y};
  }
  Arrays backward(const Arrays& in, const Arrays& gy) override {  // gx = gy broadcast to x
    return {broadcast_to_shape(gy[0], in[0].shape())};
  }
  CH_GRAPH_BACKWARD { return {broadcast_to(gy[0], inputs[0]->data.shape())}; }
};

class SumAxis final : public Function {
 public:
  SumAxis(int32_t axis, bool keepdims) : axis_(axis), keepdims_(keepdims) {}
  const char* name() const override { return "SumAxis"; }
  bool retains_input(size_t) const override { return false; }  // backward reads x's shape
  Arrays forward(const Arrays& in) override {
    const Array& x = in[0];
    check_float("sum", x);
    axis_ = normalize_axis(axis_, x.ndim(), "sum");
    Shape kept = x.shape();
    kept[axis_] = 1;
    Array y = Array::empty(x.dtype(), kept, x.device());  // the sum over the axis, extent 1
    kernels::sum_to(x, y);
    if (keepdims_) return {y};
    Shape dropped;
    for (int32_t i = 0; i < x.ndim(); ++i)
      if (i != axis_) dropped.push_back(x.shape()[i]);
    return {y.reshaped(dropped)};
  }
  Arrays backward(const Arrays& in, const Arrays& gy) override {
    Shape kept = in[0].shape();
    kept[axis_] = 1;
    return {broadcast_to_shape(gy[0].reshaped(kept), in[0].shape())};
  }
  CH_GRAPH_BACKWARD {
    Shape kept = inputs[0]->data.shape();
    kept[axis_] = 1;
    return {broadcast_to(reshape(gy[0], kept), inputs[0]->data.shape())};
  }

 private:
  int32_t axis_;
  bool keepdims_;
};

// sum_to: the backward of a broadcast, itself differentiable (its backward
// broadcasts back).
class SumTo final : public Function {
 public:
  explicit SumTo(const Shape& shape) : shape_(shape) {}
  const char* name() const override { return "SumTo"; }
  bool retains_input(size_t) const override { return false; }  // backward reads x's shape
  Arrays forward(const Arrays& in) override {
    check_float("sum_to", in[0]);
    return {sum_to_shape(in[0], shape_)};
  }
  Arrays backward(const Arrays& in, const Arrays& gy) override {
    return {broadcast_to_shape(gy[0], in[0].shape())};
  }
  CH_GRAPH_BACKWARD { return {broadcast_to(gy[0], inputs[0]->data.shape())}; }

 private:
  Shape shape_;
};

}  // namespace

VarPtr sum_to(const VarPtr& x, const Shape& shape) {
  if (x->data.shape() == shape) return x;
  return apply1(std::make_shared<SumTo>(shape), {x});
}

VarPtr sum(const VarPtr& x) { return apply1(std::make_shared<Sum>(), {x}); }
VarPtr sum_axis(const VarPtr& x, int32_t axis, bool keepdims) {
  return apply1(std::make_shared<SumAxis>(axis, keepdims), {x});
}

}  // namespace chainerc::ops
