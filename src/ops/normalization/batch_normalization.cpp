// BatchNormalization: y = gamma * (x - mean) / sqrt(var + eps) + beta per
// feature, as Chainer 1.x's chainer.functions.BatchNormalization. x is
// (N, size..., rest...): the statistics are taken over the batch axis and the
// trailing axes (e.g. size (C,) on NCHW: per channel over N, H, W).
//
// Modes (Chainer 1.x): training — batch statistics, and the running averages
// avg_mean/avg_var move by avg = decay * avg + (1 - decay) * stat (the
// variance unbiased by m / (m - 1)); test — normalizes with avg_mean and
// avg_var + eps; finetune — batch statistics, and the running averages
// become population statistics (decay = 1 - 1/N for the N-th batch since the
// last start_finetuning).
// The graph backward (double backprop) writes backward's formula with
// differentiable functions, the batch statistics recomputed from x as
// functions of x, gamma a parameter variable (the second pass reaches it);
// the parameters' gradients stay arrays, as Linear's.
#include <algorithm>

#include "core/config.h"
#include "kernels/normalization.h"
#include "ops/op_util.h"
#include "ops/ops.h"
#include "ops/parametric.h"

namespace chainerc::ops {
namespace {

struct BNConfig {
  Shape size;
  double decay, eps;
  DType dtype;
};

class BatchNormalization final : public Function {
 public:
  BatchNormalization(const BNConfig& c, std::shared_ptr<Parameters> p,
                     std::shared_ptr<BatchNormState> s, bool train, bool finetune)
      : c_(c), state_(std::move(s)), train_(train), finetune_(finetune) {
    parameters = std::move(p);
  }
  const char* name() const override { return "BatchNormalization"; }
  FuncPtr clone() const override { return clone_with(config::train_default(), false); }
  FuncPtr clone_with(bool train, bool finetune) const {
    return std::make_shared<BatchNormalization>(c_, parameters, state_, train, finetune);
  }
  const std::shared_ptr<BatchNormState>& state() const { return state_; }

  Arrays forward(const Arrays& in) override {
    const char* who = "batch_normalization";
    if (in.size() != 1) fail(CH_ERR_INVALID_ARGUMENT, who, ": takes 1 input, got ", in.size());
    const Array& x = in[0];
    check_float(who, x);
    const Array& gamma = (*parameters)[0].param;
    if (x.dtype() != gamma.dtype())
      fail(CH_ERR_DTYPE, who, ": x is ", dtype_name(x.dtype()), " but gamma is ",
           dtype_name(gamma.dtype()));
    const int32_t k = c_.size.ndim();
    bool ok = x.ndim() >= k + 1;
    for (int32_t i = 0; ok && i < k; ++i) ok = x.shape()[i + 1] == c_.size[i];
    if (!ok)
      fail(CH_ERR_SHAPE, who, ": x of shape ", x.shape().to_string(),
           " does not have the normalized shape ", c_.size.to_string(), " after its batch axis");
    const int64_t L = x.shape()[0], C = c_.size.size();
    const int64_t R = L > 0 && C > 0 ? x.size() / (L * C) : 0, m = L * R;
    use_batch_ = train_ || finetune_;
    if (use_batch_ && m < 1)
      fail(CH_ERR_SHAPE, who, ": x of shape ", x.shape().to_string(),
           " has no samples to take statistics of");
    // The running averages live with the parameters: after the parameters
    // moved to another device (ch_function_set_to_gpu / to_cpu), the next
    // application moves the averages there too.
    if (state_->avg_mean.device() != gamma.device()) {
      Array mean = state_->avg_mean.to_device(gamma.device());
      Array var = state_->avg_var.to_device(gamma.device());
      state_->avg_mean = std::move(mean);
      state_->avg_var = std::move(var);
    }
    Array y = Array::empty_like(x);
    // Kept for backward (C elements each; x itself is kept as the input):
    // with batch statistics the batch's mean and inv_std, which the kernel
    // writes; in test mode copies of the running averages as this forward
    // uses them (later applications may move them before this backward).
    if (use_batch_) {
      mean_ = Array::empty(x.dtype(), Shape{C}, x.device());
      stat_ = Array::empty(x.dtype(), Shape{C}, x.device());
    } else {
      mean_ = state_->avg_mean.copy();
      stat_ = state_->avg_var.copy();
    }
    double decay = c_.decay;
    if (use_batch_ && finetune_) {
      state_->n += 1;
      decay = 1.0 - 1.0 / static_cast<double>(state_->n);
    }
    const double adjust = static_cast<double>(m) / std::max(static_cast<double>(m) - 1.0, 1.0);
    const kernels::BatchNorm bn{L, C, R, use_batch_, decay, adjust, c_.eps};
    kernels::batch_norm_forward(x, gamma, (*parameters)[1].param, bn, state_->avg_mean,
                                state_->avg_var, y, mean_, stat_);
    return {y};
  }

  Arrays backward(const Arrays& in, const Arrays& gys) override {
    const Array& x = in[0];
    const Array& gy = gys[0];
    const int64_t L = x.shape()[0], C = c_.size.size();
    const int64_t R = L > 0 && C > 0 ? x.size() / (L * C) : 0;
    Array gx = Array::empty_like(x);
    const kernels::BatchNorm bn{L, C, R, use_batch_, c_.decay, 1.0, c_.eps};
    kernels::batch_norm_backward(x, gy, mean_, stat_, (*parameters)[0].param, bn,
                                 (*parameters)[0].grad, (*parameters)[1].grad, gx);
    return {gx};
  }

  // x as (L, C, R), gamma as (1, C, 1). With batch statistics (m = L R):
  //   x_hat = (x - mean) inv_std, inv_std = (var + eps)^-1/2,
  //   gx = gamma inv_std (gy - (x_hat sum(gy x_hat) + sum(gy)) / m);
  // with the running averages gx = gamma inv_std gy, inv_std a constant.
  CH_GRAPH_BACKWARD {
    const VarPtr& xv = inputs[0];
    const Array& x = xv->data;
    const int64_t L = x.shape()[0], C = c_.size.size();
    const int64_t R = L > 0 && C > 0 ? x.size() / (L * C) : 0;
    if (parameter_grads_enabled()) {
      Array scratch = Array::empty_like(x);
      const kernels::BatchNorm bn{L, C, R, use_batch_, c_.decay, 1.0, c_.eps};
      kernels::batch_norm_backward(x, gy[0]->data, mean_, stat_, (*parameters)[0].param, bn,
                                   (*parameters)[0].grad, (*parameters)[1].grad, scratch);
    }
    if (!needs_input_grad(0)) return {nullptr};
    const Shape flat{L, C, R}, per_c{1, C, 1};
    const VarPtr gamma = reshape(parameter_variable(*this, 0), per_c);
    const VarPtr g = reshape(gy[0], flat);
    if (!use_batch_) {
      Array inv = run(kernels::pow_scalar, run(kernels::add_scalar, stat_, c_.eps), -0.5);
      return {reshape(mul(g, mul(gamma, constant_variable(inv.reshaped(per_c)))), x.shape())};
    }
    const double inv_m = 1.0 / static_cast<double>(L * R);
    const VarPtr x3 = reshape(xv, flat);
    const VarPtr xc = sub(x3, mul_scalar(sum_to(x3, per_c), inv_m));
    const VarPtr var = mul_scalar(sum_to(mul(xc, xc), per_c), inv_m);
    const VarPtr inv_std = pow_scalar(add_scalar(var, c_.eps), -0.5);
    const VarPtr x_hat = mul(xc, inv_std);
    const VarPtr mean_term =
        mul_scalar(add(mul(x_hat, sum_to(mul(g, x_hat), per_c)), sum_to(g, per_c)), inv_m);
    return {reshape(mul(mul(gamma, inv_std), sub(g, mean_term)), x.shape())};
  }

 private:
  BNConfig c_;
  std::shared_ptr<BatchNormState> state_;
  bool train_, finetune_;
  bool use_batch_ = true;
  // With use_batch the batch's mean and inv_std; without, copies of the
  // running mean and variance forward normalized with.
  Array mean_, stat_;
};

}  // namespace

FuncPtr batch_normalization_new(const Shape& size, double decay, double eps, DType dtype) {
  const char* who = "batch_normalization";
  if (!is_floating(dtype))
    fail(CH_ERR_DTYPE, who, ": dtype ", dtype_name(dtype),
         " is not supported (float32 or float64)");
  for (int32_t i = 0; i < size.ndim(); ++i)
    if (size[i] <= 0)
      fail(CH_ERR_INVALID_ARGUMENT, who, ": size ", size.to_string(), " has a non-positive extent");
  if (size.ndim() == 0) fail(CH_ERR_INVALID_ARGUMENT, who, ": size must have at least one extent");
  if (!(eps > 0)) fail(CH_ERR_INVALID_ARGUMENT, who, ": eps ", eps, " must be positive");
  auto params = std::make_shared<Parameters>();
  params->push_back(Parameter{"gamma", Array::full(dtype, size, 1.0), Array::zeros(dtype, size)});
  params->push_back(Parameter{"beta", Array::zeros(dtype, size), Array::zeros(dtype, size)});
  auto state = std::make_shared<BatchNormState>();
  state->avg_mean = Array::zeros(dtype, size);
  state->avg_var = Array::zeros(dtype, size);
  return std::make_shared<BatchNormalization>(BNConfig{size, decay, eps, dtype}, std::move(params),
                                              std::move(state), true, false);
}

FuncPtr batch_normalization_node(const FuncPtr& bn, bool train, bool finetune) {
  auto* f = dynamic_cast<const BatchNormalization*>(bn.get());
  if (!f)
    fail(CH_ERR_INVALID_ARGUMENT, "batch_normalization: function '", bn->name(),
         "' is not a BatchNormalization");
  return f->clone_with(train, finetune);
}

std::shared_ptr<BatchNormState> batch_normalization_state(const FuncPtr& bn) {
  auto* f = dynamic_cast<const BatchNormalization*>(bn.get());
  if (!f)
    fail(CH_ERR_INVALID_ARGUMENT, "batch_normalization: function '", bn->name(),
         "' is not a BatchNormalization");
  return f->state();
}

}  // namespace chainerc::ops
