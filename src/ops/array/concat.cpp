// concat: join variables along an axis (Chainer's F.concat, axis=1 by
// default). All inputs have one dtype and equal extents except along the
// axis. Backward splits gy into the inputs' pieces. Any dtype.
#include <vector>

#include "kernels/array.h"
#include "ops/graph_ops.h"
#include "ops/op_util.h"
#include "ops/ops.h"

namespace chainerc::ops {
namespace {

// The backward of concat as a function of gy: the pieces along the axis,
// one output per piece; its backward concatenates the pieces' gradients.
class Split final : public Function {
 public:
  Split(int32_t axis, std::vector<Shape> shapes) : axis_(axis), shapes_(std::move(shapes)) {}
  const char* name() const override { return "Split"; }
  bool retains_input(size_t) const override { return false; }
  Arrays forward(const Arrays& in) override {
    Arrays out;
    for (const Shape& s : shapes_) out.push_back(Array::empty(in[0].dtype(), s, in[0].device()));
    kernels::concat_split(in[0], axis_, out);
    return out;
  }
  Arrays backward(const Arrays& in, const Arrays& gys) override {
    Array gx = Array::empty_like(in[0]);
    kernels::concat(gys, axis_, gx);
    return {gx};
  }
  CH_GRAPH_BACKWARD { return {concat(gy, axis_)}; }

 private:
  int32_t axis_;
  std::vector<Shape> shapes_;
};

class Concat final : public Function {
 public:
  explicit Concat(int32_t axis) : axis_(axis) {}
  const char* name() const override { return "Concat"; }
  // Backward splits gy by the inputs' shapes.
  bool retains_input(size_t) const override { return false; }

  Arrays forward(const Arrays& in) override {
    if (in.empty()) fail(CH_ERR_INVALID_ARGUMENT, "concat: no inputs");
    const Array& x0 = in[0];
    if (x0.ndim() == 0)
      fail(CH_ERR_SHAPE, "concat: input 0 is 0-d; arrays with at least one axis are expected");
    axis_ = normalize_axis(axis_, x0.ndim(), "concat");
    Shape out = x0.shape();
    out[axis_] = 0;
    for (size_t i = 0; i < in.size(); ++i) {
      const Array& x = in[i];
      if (x.device() != x0.device())
        fail(CH_ERR_DEVICE, "concat: input ", i, " is on ", x.device().to_string(),
             " but input 0 is on ", x0.device().to_string());
      if (x.dtype() != x0.dtype())
        fail(CH_ERR_DTYPE, "concat: input ", i, " is ", dtype_name(x.dtype()), " but input 0 is ",
             dtype_name(x0.dtype()));
      bool ok = x.ndim() == x0.ndim();
      for (int32_t d = 0; ok && d < x.ndim(); ++d) ok = d == axis_ || x.shape()[d] == x0.shape()[d];
      if (!ok)
        fail(CH_ERR_SHAPE, "concat: input ", i, " has shape ", x.shape().to_string(),
             " and input 0 has shape ", x0.shape().to_string(),
             "; they must agree except along axis ", axis_);
      out[axis_] = checked_add(out[axis_], x.shape()[axis_], "concat", "the extent along the axis");
    }
    Array y = Array::empty(x0.dtype(), out, x0.device());
    kernels::concat(in, axis_, y);
    return {y};
  }

  Arrays backward(const Arrays& in, const Arrays& gy) override {
    Arrays gx;
    gx.reserve(in.size());
    for (const Array& x : in) gx.push_back(Array::empty(gy[0].dtype(), x.shape(), x.device()));
    kernels::concat_split(gy[0], axis_, gx);
    return gx;
  }
  CH_GRAPH_BACKWARD {
    std::vector<Shape> shapes;
    for (const VarPtr& x : inputs) shapes.push_back(x->data.shape());
    return apply_function(std::make_shared<Split>(axis_, std::move(shapes)), {gy[0]});
  }

 private:
  int32_t axis_;
};

}  // namespace

std::vector<VarPtr> split_axis(const VarPtr& x, int32_t axis, std::vector<Shape> shapes) {
  return apply_function(std::make_shared<Split>(axis, std::move(shapes)), {x});
}

VarPtr concat(const std::vector<VarPtr>& xs, int32_t axis) {
  if (xs.empty()) fail(CH_ERR_INVALID_ARGUMENT, "concat: no inputs");
  return apply1(std::make_shared<Concat>(axis), xs);
}

}  // namespace chainerc::ops
