// broadcast_to: y = x broadcast to a shape by NumPy's rules; backward sums
// the gradient over the broadcast axes.
#include "ops/op_util.h"
#include "ops/ops.h"

namespace chainerc::ops {
namespace {

class BroadcastTo final : public Function {
 public:
  explicit BroadcastTo(const Shape& shape) : shape_(shape) {}
  const char* name() const override { return "BroadcastTo"; }
  Arrays forward(const Arrays& in) override {
    const Array& x = in[0];
    if (x.ndim() > shape_.ndim() || broadcast_shapes(x.shape(), shape_, "broadcast_to") != shape_)
      fail(CH_ERR_SHAPE, "broadcast_to: cannot broadcast ", x.shape().to_string(), " to ",
           shape_.to_string());
    return {broadcast_to_shape(x, shape_)};
  }
  Arrays backward(const Arrays& in, const Arrays& gy) override {
    return {sum_to_shape(gy[0], in[0].shape())};
  }
  CH_GRAPH_BACKWARD { return {sum_to(gy[0], inputs[0]->data.shape())}; }

 private:
  Shape shape_;
};

}  // namespace

VarPtr broadcast_to(const VarPtr& x, const Shape& shape) {
  return apply1(std::make_shared<BroadcastTo>(shape), {x});
}

}  // namespace chainerc::ops
