// transpose: permute the axes of x (NumPy's transpose); axes omitted reverses
// them. Backward applies the inverse permutation to gy. Any dtype.
#include <vector>

#include "kernels/array.h"
#include "ops/op_util.h"
#include "ops/ops.h"

namespace chainerc::ops {
namespace {

// x with axes permuted: y's axis i is x's axis perm[i].
Array permuted(const Array& x, const std::vector<int32_t>& perm) {
  Shape s;
  for (int32_t p : perm) s.push_back(x.shape()[p]);
  Array y = Array::empty(x.dtype(), s, x.device());
  kernels::transpose(x, perm, y);
  return y;
}

class Transpose final : public Function {
 public:
  Transpose(std::vector<int32_t> axes, bool reverse) : axes_(std::move(axes)), reverse_(reverse) {}
  const char* name() const override { return "Transpose"; }
  Arrays forward(const Arrays& in) override {
    const Array& x = in[0];
    const int32_t nd = x.ndim();
    if (reverse_) {
      for (int32_t i = nd - 1; i >= 0; --i) axes_.push_back(i);
    } else {
      if (static_cast<int32_t>(axes_.size()) != nd)
        fail(CH_ERR_SHAPE, "transpose: ", axes_.size(), " axes given for an array of shape ",
             x.shape().to_string());
      std::vector<bool> seen(static_cast<size_t>(nd), false);
      for (int32_t& a : axes_) {
        const int32_t given = a;
        a = normalize_axis(a, nd, "transpose");
        if (seen[static_cast<size_t>(a)])
          fail(CH_ERR_INVALID_ARGUMENT, "transpose: axis ", given, " is repeated in the axes");
        seen[static_cast<size_t>(a)] = true;
      }
    }
    return {permuted(x, axes_)};
  }
  Arrays backward(const Arrays&, const Arrays& gy) override {
    std::vector<int32_t> inverse(axes_.size());
    for (size_t i = 0; i < axes_.size(); ++i)
      inverse[static_cast<size_t>(axes_[i])] = static_cast<int32_t>(i);
    return {permuted(gy[0], inverse)};
  }
  CH_GRAPH_BACKWARD {
    std::vector<int32_t> inverse(axes_.size());
    for (size_t i = 0; i < axes_.size(); ++i)
      inverse[static_cast<size_t>(axes_[i])] = static_cast<int32_t>(i);
    return {transpose(gy[0], inverse.data(), static_cast<int32_t>(inverse.size()))};
  }

 private:
  std::vector<int32_t> axes_;
  bool reverse_;
};

}  // namespace

VarPtr transpose(const VarPtr& x, const int32_t* axes, int32_t naxes) {
  if (naxes < 0 || naxes > CH_MAX_NDIM)
    fail(CH_ERR_INVALID_ARGUMENT, "transpose: naxes ", naxes, " is out of range [0, ", CH_MAX_NDIM,
         "]");
  if (naxes && !axes) fail(CH_ERR_INVALID_ARGUMENT, "transpose: axes is NULL with naxes ", naxes);
  std::vector<int32_t> list(axes ? axes : nullptr, axes ? axes + naxes : nullptr);
  return apply1(std::make_shared<Transpose>(std::move(list), axes == nullptr), {x});
}

}  // namespace chainerc::ops
