// pad (Chainer 7's F.pad, mode 'constant'): x placed inside an array filled
// with a constant; its backward reads the interior back (a strided gather),
// whose backward is this scatter again: twice differentiable. Any dtype.
#include "kernels/array.h"
#include "ops/graph_ops.h"
#include "ops/op_util.h"
#include "ops/ops.h"

namespace chainerc::ops {
namespace {

class Pad final : public Function {
 public:
  Pad(const kernels::StridedView& v, const Shape& out, double value)
      : view_(v), out_(out), value_(value) {}
  const char* name() const override { return "Pad"; }
  bool retains_input(size_t) const override { return false; }
  Arrays forward(const Arrays& in) override {
    // The view's positions are distinct: adding x - value over the constant
    // writes x there.
    Array y = Array::full(in[0].dtype(), out_, value_, in[0].device());
    Array x = in[0];
    if (value_ != 0.0) {
      if (!is_floating(x.dtype()))
        fail(CH_ERR_UNSUPPORTED, "pad: constant_values ", value_,
             " with an int32 x; only 0 is supported for int32");
      Array shifted = Array::empty_like(x);
      kernels::add_scalar(x, -value_, shifted);
      x = shifted;
    }
    kernels::scatter_add(x, view_, Array(), y);
    return {y};
  }
  Arrays backward(const Arrays& in, const Arrays& gy) override {
    Array gx = Array::empty(gy[0].dtype(), in[0].shape(), gy[0].device());
    kernels::gather(gy[0], view_, Array(), gx);
    return {gx};
  }
  CH_GRAPH_BACKWARD { return {strided_gather(gy[0], view_, inputs[0]->data.shape(), Array())}; }

 private:
  kernels::StridedView view_;
  Shape out_;
  double value_;
};

}  // namespace

VarPtr pad(const VarPtr& x, const int32_t* pad_width, int32_t npad_width, double constant_value) {
  const Shape& s = x->data.shape();
  const int32_t nd = s.ndim();
  if (npad_width && !pad_width)
    fail(CH_ERR_INVALID_ARGUMENT, "pad: pad_width is NULL with npad_width ", npad_width);
  if (npad_width != 1 && npad_width != 2 && npad_width != 2 * nd)
    fail(CH_ERR_INVALID_ARGUMENT, "pad: ", npad_width, " pad widths given for x of shape ",
         s.to_string(), "; 1, 2 or ", 2 * nd, " (before and after, per axis) expected");
  for (int32_t i = 0; i < npad_width; ++i)
    if (pad_width[i] < 0)
      fail(CH_ERR_INVALID_ARGUMENT, "pad: pad width ", pad_width[i], " (element ", i,
           ") is negative");
  kernels::StridedView v;
  int64_t ys[CH_MAX_NDIM] = {};
  Shape out;
  for (int32_t d = 0; d < nd; ++d) {
    const int32_t k = npad_width == 2 * nd ? 2 * d : 0;
    const int64_t before = pad_width[k], after = pad_width[npad_width == 1 ? 0 : k + 1];
    out.push_back(checked_add(checked_add(s[d], before, "pad", "the padded extent"), after, "pad",
                              "the padded extent"));
  }
  contiguous_strides(out, ys);
  for (int32_t d = 0; d < nd; ++d) {
    const int32_t k = npad_width == 2 * nd ? 2 * d : 0;
    v.offset += pad_width[k] * ys[d];
    v.stride[d] = ys[d];
  }
  return apply1(std::make_shared<Pad>(v, out, constant_value), {x});
}

}  // namespace chainerc::ops
