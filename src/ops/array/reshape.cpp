// reshape: the same data with another shape of the same size (one extent may be -1).
#include "ops/op_util.h"
#include "ops/ops.h"

namespace chainerc::ops {
namespace {

Shape resolve_shape(const Shape& requested, const Shape& from) {
  Shape s = requested;
  int32_t infer = -1;
  int64_t known = 1;
  bool zero = false, overflow = false;  // the product is checked: signed overflow is UB
  for (int32_t i = 0; i < s.ndim(); ++i) {
    if (s[i] == -1) {
      if (infer >= 0)
        fail(CH_ERR_SHAPE, "reshape: more than one extent is -1 in ", requested.to_string());
      infer = i;
    } else if (s[i] < 0) {
      fail(CH_ERR_SHAPE, "reshape: extent ", s[i], " in ", requested.to_string(), " is negative");
    } else if (s[i] == 0) {
      zero = true;
    } else if (!overflow && __builtin_mul_overflow(known, s[i], &known)) {
      overflow = true;
    }
  }
  if (zero) known = 0;
  if (overflow && !zero)
    fail(CH_ERR_SHAPE, "reshape: cannot reshape ", from.to_string(), " to ", requested.to_string(),
         ": the product of the extents overflows 64 bits");
  if (infer >= 0) {
    if (known == 0 || from.size() % known != 0)
      fail(CH_ERR_SHAPE, "reshape: cannot reshape ", from.to_string(), " to ",
           requested.to_string());
    s[infer] = from.size() / known;
  }
  if (s.size() != from.size())
    fail(CH_ERR_SHAPE, "reshape: cannot reshape ", from.to_string(), " (size ", from.size(),
         ") to ", requested.to_string(), " (size ", s.size(), ")");
  return s;
}

class Reshape final : public Function {
 public:
  explicit Reshape(const Shape& shape) : shape_(shape) {}
  const char* name() const override { return "Reshape"; }
  bool retains_input(size_t) const override { return false; }  // backward reads x's shape
  Arrays forward(const Arrays& in) override {
    return {in[0].reshaped(resolve_shape(shape_, in[0].shape()))};
  }
  Arrays backward(const Arrays& in, const Arrays& gy) override {
    return {gy[0].reshaped(in[0].shape())};
  }
  CH_GRAPH_BACKWARD { return {reshape(gy[0], inputs[0]->data.shape())}; }

 private:
  Shape shape_;
};

}  // namespace

VarPtr reshape(const VarPtr& x, const Shape& shape) {
  return apply1(std::make_shared<Reshape>(shape), {x});
}

}  // namespace chainerc::ops
