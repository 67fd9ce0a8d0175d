// concat: join variables along an axis (Chainer's F.concat, axis=1 by
// default). All inputs have one dtype and equal extents except along the
// axis. Backward splits gy into the inputs' pieces. Any dtype.
#include <cstring>
#include <vector>

#include "ops/op_util.h"
#include "ops/ops.h"

namespace chainerc::ops {
namespace {

class Concat final : public Function {
 public:
  explicit Concat(int32_t axis) : axis_(axis) {}
  const char* name() const override { return "Concat"; }
  // Backward splits gy by the inputs' shapes.
  bool retains_input(size_t) const override { return false; }

  Arrays forward(const Arrays& in) override {
    if (in.empty()) fail(CH_ERR_INVALID_ARGUMENT, "concat: no inputs");
    const Array& x0 = in[0];
    cpu::require_cpu(x0, "concat");
    if (x0.ndim() == 0)
      fail(CH_ERR_SHAPE, "concat: input 0 is 0-d; arrays with at least one axis are expected");
    axis_ = normalize_axis(axis_, x0.ndim(), "concat");
    Shape out = x0.shape();
    out[axis_] = 0;
    for (size_t i = 0; i < in.size(); ++i) {
      const Array& x = in[i];
      cpu::require_cpu(x, "concat");
      if (x.dtype() != x0.dtype())
        fail(CH_ERR_DTYPE, "concat: input ", i, " is ", dtype_name(x.dtype()), " but input 0 is ",
             dtype_name(x0.dtype()));
      bool ok = x.ndim() == x0.ndim();
      for (int32_t d = 0; ok && d < x.ndim(); ++d) ok = d == axis_ || x.shape()[d] == x0.shape()[d];
      if (!ok)
        fail(CH_ERR_SHAPE, "concat: input ", i, " has shape ", x.shape().to_string(),
             " and input 0 has shape ", x0.shape().to_string(),
             "; they must agree except along axis ", axis_);
      out[axis_] += x.shape()[axis_];
    }
    Array y = Array::empty(x0.dtype(), out, x0.device());
    copy_pieces(in, y, true);
    return {y};
  }

  Arrays backward(const Arrays& in, const Arrays& gy) override {
    Arrays gx;
    gx.reserve(in.size());
    for (const Array& x : in) gx.push_back(Array::empty(gy[0].dtype(), x.shape(), x.device()));
    copy_pieces(gx, gy[0], false);
    return gx;
  }

 private:
  // Copies the pieces into y (forward) or y into the pieces (backward).
  void copy_pieces(const Arrays& pieces, const Array& y, bool into_y) const {
    const size_t elem = dtype_size(y.dtype());
    int64_t outer = 1, inner = 1;
    for (int32_t d = 0; d < axis_; ++d) outer *= y.shape()[d];
    for (int32_t d = axis_ + 1; d < y.ndim(); ++d) inner *= y.shape()[d];
    const size_t row = static_cast<size_t>(y.shape()[axis_] * inner) * elem;
    char* py = static_cast<char*>(y.raw());
    size_t offset = 0;
    for (const Array& x : pieces) {
      const size_t chunk = static_cast<size_t>(x.shape()[axis_] * inner) * elem;
      char* px = static_cast<char*>(x.raw());
      if (chunk)
        for (int64_t o = 0; o < outer; ++o) {
          char* yp = py + static_cast<size_t>(o) * row + offset;
          char* xp = px + static_cast<size_t>(o) * chunk;
          if (into_y)
            std::memcpy(yp, xp, chunk);
          else
            std::memcpy(xp, yp, chunk);
        }
      offset += chunk;
    }
  }

  int32_t axis_;
};

}  // namespace

VarPtr concat(const std::vector<VarPtr>& xs, int32_t axis) {
  if (xs.empty()) fail(CH_ERR_INVALID_ARGUMENT, "concat: no inputs");
  return apply1(std::make_shared<Concat>(axis), xs);
}

}  // namespace chainerc::ops
