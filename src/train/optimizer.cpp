#include "optimizer.h"

#include <cmath>

#include "kernels/math.h"
#include "kernels/optimizers.h"

namespace chainerc {

void Optimizer::require_setup(const char* who) const {
  if (!is_setup)
    fail(CH_ERR_INVALID_ARGUMENT, who, ": optimizer '", name(),
         "' is not set up (call ch_optimizer_setup or ch_optimizer_setup_arrays first)");
}

void Optimizer::setup(std::vector<NamedParameter> params, const char* who) {
  std::vector<OptSlot> fresh;
  fresh.reserve(params.size());
  for (NamedParameter& p : params) {
    if (!p.param.defined() || !p.grad.defined())
      fail(CH_ERR_INVALID_ARGUMENT, who, ": parameter '", p.path, "' has no ",
           p.param.defined() ? "gradient" : "data", " array");
    if (!is_floating(p.param.dtype()))
      fail(CH_ERR_DTYPE, who, ": parameter '", p.path, "' is a ", p.param.describe(),
           "; optimizers update float32 or float64 parameters");
    if (p.param.shape() != p.grad.shape() || p.param.dtype() != p.grad.dtype() ||
        p.param.device() != p.grad.device())
      fail(CH_ERR_SHAPE, who, ": parameter '", p.path, "' is a ", p.param.describe(),
           " but its gradient is a ", p.grad.describe());
    OptSlot s;
    s.path = std::move(p.path);
    s.param = std::move(p.param);
    s.grad = std::move(p.grad);
    init_state(s);
    for (const std::string& n : state_names()) s.keys.push_back(s.path + "/" + n);
    fresh.push_back(std::move(s));
  }
  slots.swap(fresh);
  t = 0;
  is_setup = true;
}

void Optimizer::update(const char* who) {
  require_setup(who);
  ++t;
  for (OptSlot& s : slots) update_one(s);
}

void Optimizer::zero_grads() {
  // A CPU gradient the engine alone holds is only marked zero: its first
  // accumulation in backward writes it (Linear's GEMM with beta 0), and any
  // other reader or writer sees the zeros written at its first access.
  for (OptSlot& s : slots)
    if (!s.grad.defer_zero()) kernels::zero_fill(s.grad);
}

void Optimizer::accumulate_grads(const Arrays& grads, const char* who) {
  require_setup(who);
  if (grads.size() != slots.size())
    fail(CH_ERR_INVALID_ARGUMENT, who, ": ", grads.size(), " gradients given for ", slots.size(),
         " parameters");
  for (size_t i = 0; i < grads.size(); ++i) {
    const Array& g = slots[i].grad;
    if (grads[i].dtype() != g.dtype() || grads[i].shape() != g.shape())
      fail(CH_ERR_SHAPE, who, ": grads[", i, "] is a ", grads[i].describe(),
           " but the gradient of '", slots[i].path, "' is a ", g.describe());
  }
  // Gradients from another device (a replica on another GPU, the seed's
  // data-parallel pattern) are copied to the parameter's device first.
  for (size_t i = 0; i < grads.size(); ++i) {
    Array& g = slots[i].grad;
    kernels::add_into(g,
                      grads[i].device() == g.device() ? grads[i] : grads[i].to_device(g.device()));
  }
}

double Optimizer::grads_norm() const {
  double total = 0;
  for (const OptSlot& s : slots) total += kernels::sum_of_squares(s.grad);
  return std::sqrt(total);
}

void Optimizer::clip_grads(double maxnorm, const char* who) {
  if (!(maxnorm >= 0) || !std::isfinite(maxnorm))
    fail(CH_ERR_INVALID_ARGUMENT, who, ": maxnorm is ", maxnorm, "; it must be finite and >= 0");
  require_setup(who);
  double norm = grads_norm();
  if (!(norm > maxnorm)) return;
  double rate = maxnorm / norm;
  for (OptSlot& s : slots) kernels::scale_in_place(s.grad, rate);
}

void Optimizer::weight_decay(double decay, const char* who) {
  if (!std::isfinite(decay))
    fail(CH_ERR_INVALID_ARGUMENT, who, ": decay is ", decay, "; it must be finite");
  require_setup(who);
  for (OptSlot& s : slots) kernels::add_scaled_in_place(s.grad, decay, s.param);
}

}  // namespace chainerc
