// Reductions over a set of axes (issue 42): sum_axes, mean, average, max,
// min, argmax, argmin and logsumexp (Chainer 7's F.sum / mean / average /
// max / min / argmax / argmin / logsumexp). Two kernels do the work on every
// backend: sum_to (the sums) and reduce_extreme (maxima, minima and their
// positions); backward is a broadcast (times the mask x == y for max / min),
// and the rest are compositions of differentiable functions, so every
// function here is twice differentiable.
#include <cmath>
#include <limits>
#include <vector>

#include "kernels/generated.h"
#include "kernels/math.h"
#include "ops/op_util.h"
#include "ops/ops.h"
#include "ops/reduce_util.h"

namespace chainerc::ops {

ReducedAxes reduced_axes(const char* who, const Shape& x, const int32_t* axes, int32_t naxes) {
  const int32_t nd = x.ndim();
  if (naxes < 0) fail(CH_ERR_INVALID_ARGUMENT, who, ": naxes is ", naxes, "; 0 or more expected");
  if (naxes > 0 && !axes) fail(CH_ERR_INVALID_ARGUMENT, who, ": axes is NULL but naxes is ", naxes);
  ReducedAxes r;
  r.reduced.assign(static_cast<size_t>(nd), naxes == 0);
  for (int32_t i = 0; i < naxes; ++i) {
    if (axes[i] < -nd || axes[i] >= nd)
      fail(CH_ERR_INVALID_ARGUMENT, who, ": axis ", axes[i], " is out of range for an input of ",
           nd, " dimensions (shape ", x.to_string(), ")");
    const int32_t a = axes[i] < 0 ? axes[i] + nd : axes[i];
    if (r.reduced[a])
      fail(CH_ERR_INVALID_ARGUMENT, who, ": axis ", axes[i], " is repeated in the axes");
    r.reduced[a] = true;
  }
  for (int32_t d = 0; d < nd; ++d) {
    r.kept.push_back(r.reduced[d] ? 1 : x[d]);
    if (r.reduced[d])
      r.count *= x[d];
    else
      r.dropped.push_back(x[d]);
  }
  return r;
}

// A constant of x's volatility (the engine refuses to mix volatile and
// non-volatile inputs in one node).
VarPtr constant_like(const VarPtr& x, const Array& a) {
  VarPtr c = constant_variable(a);
  c->is_volatile = x->is_volatile;
  return c;
}

// The extremum over the reduced axes as an array in the kept shape (extent 1
// on the reduced axes), and / or its position there.
Array extreme_of(const char* who, const Array& x, const ReducedAxes& r, bool is_min, Array* index) {
  check_float(who, x);
  if (r.count == 0 && r.kept.size() > 0)
    fail(CH_ERR_SHAPE, who, ": input of shape ", x.shape().to_string(),
         " has no elements along the reduced axes (a ", is_min ? "minimum" : "maximum",
         " of nothing)");
  Array y = Array::empty(x.dtype(), r.kept, x.device());
  if (index) *index = Array::empty(DType::Int32, r.kept, x.device());
  kernels::reduce_extreme(x, is_min, &y, index);
  return y;
}

namespace {

class SumAxes final : public Function {
 public:
  SumAxes(ReducedAxes r, bool keepdims) : r_(std::move(r)), keepdims_(keepdims) {}
  const char* name() const override { return "SumAxes"; }
  bool retains_input(size_t) const override { return false; }  // backward reads x's shape
  Arrays forward(const Arrays& in) override {
    check_float("sum", in[0]);
    Array y = Array::empty(in[0].dtype(), r_.kept, in[0].device());
    kernels::sum_to(in[0], y);
    return {keepdims_ ? y : y.reshaped(r_.dropped)};
  }
  Arrays backward(const Arrays& in, const Arrays& gy) override {
    return {broadcast_to_shape(gy[0].reshaped(r_.kept), in[0].shape())};
  }
  CH_GRAPH_BACKWARD { return {broadcast_to(reshape(gy[0], r_.kept), inputs[0]->data.shape())}; }

 private:
  ReducedAxes r_;
  bool keepdims_;
};

// max / min: y = the extremum; gx = gy * (x == y) (Chainer 7: every tied
// element gets gy). The mask is made once, at the first backward.
class Extreme final : public Function {
 public:
  Extreme(ReducedAxes r, bool keepdims, bool is_min)
      : r_(std::move(r)), keepdims_(keepdims), is_min_(is_min) {}
  const char* name() const override { return is_min_ ? "Min" : "Max"; }
  bool retains_input(size_t) const override { return true; }
  Arrays forward(const Arrays& in) override {
    y_ = extreme_of(is_min_ ? "min" : "max", in[0], r_, is_min_, nullptr);
    return {keepdims_ ? y_ : y_.reshaped(r_.dropped)};
  }
  Arrays backward(const Arrays& in, const Arrays& gy) override {
    const Array& m = mask(in[0]);
    Array g = broadcast_to_shape(gy[0].reshaped(r_.kept), in[0].shape());
    Array gx = Array::empty_like(g);
    kernels::mul(g, m, gx);
    return {gx};
  }
  CH_GRAPH_BACKWARD {
    const VarPtr& x = inputs[0];
    VarPtr g = broadcast_to(reshape(gy[0], r_.kept), x->data.shape());
    return {mul(g, constant_like(g, mask(x->data)))};
  }

 private:
  const Array& mask(const Array& x) {
    if (!mask_.defined()) {
      Array yb = broadcast_to_shape(y_, x.shape());
      mask_ = Array::empty_like(x);
      kernels::equal_mask(x, yb, mask_);
    }
    return mask_;
  }
  ReducedAxes r_;
  bool keepdims_, is_min_;
  Array y_, mask_;
};

VarPtr extreme(const char* who, const VarPtr& x, const int32_t* axes, int32_t naxes, bool keepdims,
               bool is_min) {
  ReducedAxes r = reduced_axes(who, x->data.shape(), axes, naxes);
  return apply1(std::make_shared<Extreme>(std::move(r), keepdims, is_min), {x});
}

VarPtr arg_extreme(const char* who, const VarPtr& x, const int32_t* axes, int32_t naxes,
                   bool is_min) {
  if (naxes > 1)
    fail(CH_ERR_INVALID_ARGUMENT, who, ": naxes is ", naxes,
         "; one axis or none (every element, a flat index) expected");
  ReducedAxes r = reduced_axes(who, x->data.shape(), axes, naxes);
  Array index;
  extreme_of(who, x->data, r, is_min, &index);
  VarPtr v = constant_variable(index.reshaped(r.dropped));  // no creator: not differentiable
  v->is_volatile = x->is_volatile;
  return v;
}

}  // namespace

VarPtr sum_axes(const VarPtr& x, const int32_t* axes, int32_t naxes, bool keepdims) {
  ReducedAxes r = reduced_axes("sum", x->data.shape(), axes, naxes);
  return apply1(std::make_shared<SumAxes>(std::move(r), keepdims), {x});
}

VarPtr mean(const VarPtr& x, const int32_t* axes, int32_t naxes, bool keepdims) {
  ReducedAxes r = reduced_axes("mean", x->data.shape(), axes, naxes);
  check_float("mean", x->data);
  const double scale =
      r.count ? 1.0 / static_cast<double>(r.count) : std::numeric_limits<double>::quiet_NaN();
  return mul_scalar(sum_axes(x, axes, naxes, keepdims), scale);
}

VarPtr average(const VarPtr& x, const int32_t* axes, int32_t naxes, const VarPtr& weights,
               bool keepdims) {
  ReducedAxes r = reduced_axes("average", x->data.shape(), axes, naxes);
  check_float_pair("average", x->data, weights->data);
  if (naxes > 1)
    fail(CH_ERR_INVALID_ARGUMENT, "average: naxes is ", naxes,
         "; weights are supported over all axes or one axis only (as Chainer)");
  const Shape& xs = x->data.shape();
  VarPtr w = weights;
  if (naxes == 0) {
    if (weights->data.shape() != xs)
      fail(CH_ERR_SHAPE, "average: weights have shape ", weights->data.shape().to_string(),
           " but x has shape ", xs.to_string(), "; over all axes they must be equal");
  } else {
    const int32_t a = axes[0] < 0 ? axes[0] + xs.ndim() : axes[0];
    if (weights->data.ndim() != 1 || weights->data.shape()[0] != xs[a])
      fail(CH_ERR_SHAPE, "average: weights have shape ", weights->data.shape().to_string(),
           "; along axis ", axes[0], " of x ", xs.to_string(), " they must have shape (", xs[a],
           ",)");
    Shape ws;
    for (int32_t d = 0; d < xs.ndim(); ++d) ws.push_back(d == a ? xs[a] : 1);
    w = broadcast_to(reshape(weights, ws), xs);
  }
  VarPtr num = sum_axes(mul(x, w), axes, naxes, keepdims);
  VarPtr den = sum(weights);  // 0-d, broadcast by div
  return div(num, den);
}

VarPtr max(const VarPtr& x, const int32_t* axes, int32_t naxes, bool keepdims) {
  return extreme("max", x, axes, naxes, keepdims, false);
}
VarPtr min(const VarPtr& x, const int32_t* axes, int32_t naxes, bool keepdims) {
  return extreme("min", x, axes, naxes, keepdims, true);
}
VarPtr argmax(const VarPtr& x, const int32_t* axes, int32_t naxes) {
  return arg_extreme("argmax", x, axes, naxes, false);
}
VarPtr argmin(const VarPtr& x, const int32_t* axes, int32_t naxes) {
  return arg_extreme("argmin", x, axes, naxes, true);
}

// m + log(sum(exp(x - m))) with m the maximum (a constant: the value does not
// depend on it, so neither does the gradient), as Chainer 7 computes it (a
// set of -inf only gives NaN, as there).
VarPtr logsumexp_kept(const char* who, const VarPtr& x, const ReducedAxes& r) {
  Array m = extreme_of(who, x->data, r, false, nullptr);
  VarPtr mc = constant_like(x, m);
  std::vector<int32_t> axes;
  for (int32_t d = 0; d < x->data.ndim(); ++d)
    if (r.reduced[d]) axes.push_back(d);
  const int32_t n = static_cast<int32_t>(axes.size());
  VarPtr s = sum_axes(exp(sub(x, mc)), n ? axes.data() : nullptr, n, true);
  return add(log(s), mc);
}

VarPtr logsumexp(const VarPtr& x, const int32_t* axes, int32_t naxes) {
  ReducedAxes r = reduced_axes("logsumexp", x->data.shape(), axes, naxes);
  check_float("logsumexp", x->data);
  return reshape(logsumexp_kept("logsumexp", x, r), r.dropped);
}

// cumsum along an axis: the axis moved last, times U (n x n, U[i][j] = 1 for
// i <= j), moved back; every step differentiable.
VarPtr cumsum(const VarPtr& x, const int32_t* axes, int32_t naxes) {
  check_float("cumsum", x->data);
  if (naxes > 1)
    fail(CH_ERR_INVALID_ARGUMENT, "cumsum: naxes is ", naxes,
         "; one axis or none (the flattened input) expected");
  reduced_axes("cumsum", x->data.shape(), axes, naxes);  // checks the axis
  VarPtr v = x;
  int32_t a = 0;
  if (naxes == 0)
    v = reshape(x, Shape{x->data.size()});
  else
    a = axes[0] < 0 ? axes[0] + x->data.ndim() : axes[0];
  const int32_t nd = v->data.ndim();
  const int64_t n = v->data.shape()[a];
  Array u;
  dispatch_floating(x->data.dtype(), "cumsum", [&](auto t) {
    using T = decltype(t);
    std::vector<T> ones(static_cast<size_t>(n * n));
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = i; j < n; ++j) ones[static_cast<size_t>(i * n + j)] = T(1);
    u = Array::from_host(x->data.dtype(), Shape{n, n}, ones.data(), x->data.device());
  });
  VarPtr uc = constant_like(x, u);
  if (a == nd - 1) return matmul(v, uc, false, false);
  std::vector<int32_t> perm, inverse(static_cast<size_t>(nd));
  for (int32_t d = 0; d < nd; ++d)
    if (d != a) perm.push_back(d);
  perm.push_back(a);
  for (int32_t d = 0; d < nd; ++d) inverse[perm[d]] = d;
  VarPtr y = matmul(transpose(v, perm.data(), nd), uc, false, false);
  return transpose(y, inverse.data(), nd);
}

}  // namespace chainerc::ops
