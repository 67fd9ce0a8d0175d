// The node of layer_normalization, rms_normalization and group_normalization
// (row_normalization.h). Forward and the array backward are one fused kernel
// each (kernels::row_norm_forward / row_norm_backward); forward keeps x,
// gamma and the rows' mean and 1/std. The graph backward (double backprop)
// writes the same gradients with differentiable functions on x viewed as
// (n, groups, C / groups, R), the statistics recomputed from x as functions
// of x (as BatchNormalization's graph backward does):
//   x_hat = (x - mean) inv_std, inv_std = (var + eps)^-1/2, g = gy gamma,
//   gx = inv_std (g - mean(g) - x_hat mean(g x_hat)),
//   ggamma = sum(gy x_hat), gbeta = sum(gy),
// the means over a row's D values, the sums over the samples and positions
// of each parameter (rms: no mean is subtracted and mean(g) drops).
#include "ops/normalization/row_normalization.h"

#include <cmath>

#include "core/error.h"
#include "ops/op_util.h"
#include "ops/ops.h"

namespace chainerc::ops {
namespace {

class RowNormalization final : public Function {
 public:
  explicit RowNormalization(const RowNormView& v) : v_(v) {}
  const char* name() const override { return v_.node; }

  Arrays forward(const Arrays& in) override {
    const Array& x = in[0];
    const bool has_beta = in.size() > 2;
    Array y = Array::empty_like(x);
    mean_ = Array::empty(x.dtype(), Shape{v_.p.rows}, x.device());
    inv_std_ = Array::empty(x.dtype(), Shape{v_.p.rows}, x.device());
    kernels::row_norm_forward(x, in[1], has_beta ? in[2] : Array(), v_.p, y, mean_, inv_std_);
    return {y};
  }

  Arrays backward(const Arrays& in, const Arrays& gys) override {
    const Array& x = in[0];
    const bool has_beta = in.size() > 2;
    Array gx = needs_input_grad(0) ? Array::empty_like(x) : Array();
    Array ggamma = Array::empty_like(in[1]);
    Array gbeta = has_beta ? Array::empty_like(in[2]) : Array();
    kernels::row_norm_backward(x, gys[0], in[1], mean_, inv_std_, v_.p, gx, ggamma, gbeta);
    Arrays out{gx, needs_input_grad(1) ? ggamma : Array()};
    if (has_beta) out.push_back(needs_input_grad(2) ? gbeta : Array());
    return out;
  }

  CH_GRAPH_BACKWARD {
    const kernels::RowNorm& p = v_.p;
    const int64_t per_group = p.R > 0 ? p.D / p.R : 0;
    const Shape v4{v_.n, p.groups, per_group, p.R}, st{v_.n, p.groups, 1, 1},
        ps{1, p.groups, per_group, 1};
    const double inv_d = p.D > 0 ? 1.0 / static_cast<double>(p.D) : 0.0;
    const VarPtr x4 = reshape(inputs[0], v4);
    const VarPtr g4 = reshape(gy[0], v4);
    const VarPtr xc = p.center ? sub(x4, mul_scalar(sum_to(x4, st), inv_d)) : x4;
    const VarPtr var = mul_scalar(sum_to(mul(xc, xc), st), inv_d);
    const VarPtr inv_std = pow_scalar(add_scalar(var, p.eps), -0.5);
    const VarPtr x_hat = mul(xc, inv_std);
    std::vector<VarPtr> out(inputs.size());
    if (needs_input_grad(0)) {
      const VarPtr g = mul(g4, reshape(inputs[1], ps));
      VarPtr t = sub(g, mul(x_hat, mul_scalar(sum_to(mul(g, x_hat), st), inv_d)));
      if (p.center) t = sub(t, mul_scalar(sum_to(g, st), inv_d));
      out[0] = reshape(mul(inv_std, t), inputs[0]->data.shape());
    }
    if (needs_input_grad(1)) out[1] = reshape(sum_to(mul(g4, x_hat), ps), inputs[1]->data.shape());
    if (inputs.size() > 2 && needs_input_grad(2))
      out[2] = reshape(sum_to(g4, ps), inputs[2]->data.shape());
    return out;
  }

 private:
  RowNormView v_;
  Array mean_, inv_std_;  // per row, from forward
};

}  // namespace

VarPtr row_normalization(const RowNormView& v, const VarPtr& x, const VarPtr& gamma,
                         const VarPtr& beta) {
  auto f = std::make_shared<RowNormalization>(v);
  if (beta) return apply1(f, {x, gamma, beta});
  return apply1(f, {x, gamma});
}

void check_row_norm_eps(const char* who, double eps) {
  if (!(eps >= 0) || std::isinf(eps))
    fail(CH_ERR_INVALID_ARGUMENT, who, ": eps ", eps, " must be finite and non-negative");
}

void check_row_norm_params(const char* who, const Array& x, int64_t C, const Array& gamma,
                           const Array* beta) {
  check_float(who, x);
  auto check = [&](const char* arg, const Array& a) {
    if (a.dtype() != x.dtype())
      fail(CH_ERR_DTYPE, who, ": ", arg, " is ", dtype_name(a.dtype()), " but x is ",
           dtype_name(x.dtype()));
    if (a.shape() != Shape{C})
      fail(CH_ERR_SHAPE, who, ": ", arg, " has shape ", a.shape().to_string(), " but x of shape ",
           x.shape().to_string(), " needs (", C, ",)");
  };
  check("gamma", gamma);
  if (beta) check("beta", *beta);
}

}  // namespace chainerc::ops
