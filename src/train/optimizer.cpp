#include "optimizer.h"

#include <cmath>
#include <limits>
#include <vector>

#include "kernels/math.h"
#include "kernels/optimizers.h"

namespace chainerc {

namespace {

bool step_taken(const Array& grad) { return grad.buffer() && grad.buffer()->step_taken(); }

// Disarms the gradient's step in backward unless backward has taken it (a
// taken step stays so until update).
void disarm_untaken(const Array& grad) {
  if (grad.buffer() && !grad.buffer()->step_taken()) grad.buffer()->disarm_step();
}

// Whether the gradient is a whole buffer of its own, where a step in
// backward may be armed (not a view into memory shared with other arrays).
bool whole_buffer(const Array& grad) {
  return grad.buffer() && grad.nbytes() == grad.buffer()->nbytes();
}

}  // namespace

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
    // The status names what differs: the dtype, then the device, then the shape.
    if (p.param.dtype() != p.grad.dtype() || p.param.device() != p.grad.device() ||
        p.param.shape() != p.grad.shape())
      fail(p.param.dtype() != p.grad.dtype()     ? CH_ERR_DTYPE
           : p.param.device() != p.grad.device() ? CH_ERR_DEVICE
                                                 : CH_ERR_SHAPE,
           who, ": parameter '", p.path, "' is a ", p.param.describe(), " but its gradient is a ",
           p.grad.describe());
    OptSlot s;
    s.path = std::move(p.path);
    s.param = std::move(p.param);
    s.grad = std::move(p.grad);
    init_state(s);
    for (const std::string& n : state_names()) s.keys.push_back(s.path + "/" + n);
    fresh.push_back(std::move(s));
  }
  for (OptSlot& s : slots)  // the old parameters are no longer this optimizer's to step
    if (s.grad.buffer()) s.grad.buffer()->disarm_step();
  for (OptSlot& s : fresh)
    if (s.grad.buffer()) s.grad.buffer()->restart_step_uses();
  slots.swap(fresh);
  t = 0;
  is_setup = true;
}

void Optimizer::update(const char* who) {
  require_setup(who);
  if (t == std::numeric_limits<int64_t>::max())
    fail(CH_ERR_INVALID_ARGUMENT, who, ": optimizer '", name(), "' is at t = ", t,
         ", the largest step count; another update would wrap it (ch_optimizer_set_t sets it)");
  ++t;
  // A parameter whose step backward took is already updated.
  for (OptSlot& s : slots)
    if (!step_taken(s.grad)) update_one(s);
  // The next step in backward needs a zero_grads again and counts its uses afresh.
  for (OptSlot& s : slots)
    if (Buffer* b = s.grad.buffer().get()) {
      b->disarm_step();
      b->restart_step_uses();
    }
}

void Optimizer::zero_grads() {
  // A CPU gradient the engine alone holds is only marked zero: its first
  // accumulation in backward writes it (Linear's GEMM with beta 0), and any
  // other reader or writer sees the zeros written at its first access.
  for (OptSlot& s : slots)
    if (!s.grad.defer_zero()) kernels::zero_fill(s.grad);
  const bool arm = step_in_backward && can_step_in_backward();
  for (OptSlot& s : slots) {
    if (arm && whole_buffer(s.grad))
      s.grad.buffer()->arm_step(backward_step_scale());
    else
      disarm_untaken(s.grad);
  }
}

void Optimizer::set_step_in_backward(bool on, const char* who) {
  if (on && !can_step_in_backward())
    fail(CH_ERR_INVALID_ARGUMENT, who, ": optimizer '", name(),
         "' cannot take its step in backward; only plain SGD (ch_optimizer_sgd_new) can");
  if (on && update_hook)
    fail(CH_ERR_INVALID_ARGUMENT, who, ": optimizer '", name(),
         "' has an update hook (ch_optimizer_set_update_hook, a multi-node optimizer), which must "
         "see every gradient before the update; a step in backward would skip it");
  if (on && !step_in_backward)  // forwards before this call do not count
    for (OptSlot& s : slots)
      if (s.grad.buffer()) s.grad.buffer()->restart_step_uses();
  step_in_backward = on;
  if (!on)
    for (OptSlot& s : slots) disarm_untaken(s.grad);
}

void Optimizer::rearm_steps() {
  if (!step_in_backward || !can_step_in_backward()) return;
  for (OptSlot& s : slots)
    if (s.grad.buffer() && s.grad.buffer()->step_armed() && !step_taken(s.grad))
      s.grad.buffer()->arm_step(backward_step_scale());
}

void Optimizer::refuse_taken_steps(const char* who) const {
  for (const OptSlot& s : slots)
    if (step_taken(s.grad))
      fail(CH_ERR_INVALID_ARGUMENT, who, ": the SGD step of '", s.path,
           "' was taken in the last backward (ch_optimizer_set_step_in_backward), so its "
           "gradient was never written; turn the step in backward off to read, clip, decay or "
           "add to gradients before ch_optimizer_update");
}

void Optimizer::accumulate_grads(const Arrays& grads, const char* who) {
  require_setup(who);
  refuse_taken_steps(who);
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

double Optimizer::grads_norm(const char* who) const {
  refuse_taken_steps(who);
  // Per device, one pass where the backend has it (CUDA: one copy to the host
  // for all gradients there); the sums are added in slot order either way.
  std::vector<double> sums(slots.size(), 0.0);
  std::vector<bool> done(slots.size(), false);
  for (size_t i = 0; i < slots.size(); ++i) {
    if (done[i]) continue;
    const Device dev = slots[i].grad.device();
    if (!kernels::sum_of_squares_all.implemented_for(dev.type)) {
      sums[i] = kernels::sum_of_squares(slots[i].grad);
      continue;
    }
    std::vector<Array> xs;
    std::vector<size_t> at;
    for (size_t j = i; j < slots.size(); ++j)
      if (!done[j] && slots[j].grad.device() == dev) {
        xs.push_back(slots[j].grad);
        at.push_back(j);
        done[j] = true;
      }
    std::vector<double> part;
    kernels::sum_of_squares_all.on(dev, xs, part);
    for (size_t k = 0; k < at.size(); ++k) sums[at[k]] = part[k];
  }
  double total = 0;
  for (double v : sums) total += v;
  return std::sqrt(total);
}

void Optimizer::clip_grads(double maxnorm, const char* who) {
  if (!(maxnorm >= 0) || !std::isfinite(maxnorm))
    fail(CH_ERR_INVALID_ARGUMENT, who, ": maxnorm is ", maxnorm, "; it must be finite and >= 0");
  require_setup(who);
  double norm = grads_norm(who);
  if (!(norm > maxnorm)) return;
  double rate = maxnorm / norm;
  for (OptSlot& s : slots) kernels::scale_in_place(s.grad, rate);
}

void Optimizer::weight_decay(double decay, const char* who) {
  if (!std::isfinite(decay))
    fail(CH_ERR_INVALID_ARGUMENT, who, ": decay is ", decay, "; it must be finite");
  require_setup(who);
  refuse_taken_steps(who);
  for (OptSlot& s : slots) kernels::add_scaled_in_place(s.grad, decay, s.param);
}

}  // namespace chainerc
